/* Tests for the GGUF reader (each tensor type read back through it),
 * writer and model card; the type table and conversions are in test_quant.c.
 * The malformed corpus is derived here from a valid file: every prefix of
 * it, and targeted corruptions of each field located through the offsets
 * the parser reports. Each buffer handed to the parser is a heap copy of
 * exactly the bytes under test, so ASan catches any read past the end. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/gguf.h"

/* ------------------------------------------------------------------ */
/* helpers */

static uint32_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static void poke32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void poke64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Parses an exact-size heap copy, so any over-read is caught by ASan. */
static int parse_copy(const uint8_t *buf, size_t n, const char *name, as_gguf **g, as_error *err)
{
    uint8_t *copy = malloc(n ? n : 1);
    cr_assert(copy);
    memcpy(copy, buf, n);
    int rc = as_gguf_parse(g, copy, n, name, err);
    if (rc == AS_OK) {
        /* exercise the readers over the copy before it goes */
        FILE *devnull = fopen("/dev/null", "w");
        as_gguf_print_info(*g, devnull);
        fclose(devnull);
        for (uint64_t i = 0; i < (*g)->n_tensors; i++) {
            const as_gguf_tensor *t = &(*g)->tensors[i];
            float *f = malloc(t->n_elements * sizeof *f);
            as_error e2;
            as_tensor_to_f32(t, f, &e2);
            free(f);
        }
        as_gguf_close(*g);
        *g = NULL;
    }
    free(copy);
    return rc;
}

/* The buffer must be refused with a message naming the file, an offset
 * and (when given) the field. */
static void expect_reject(const uint8_t *buf, size_t n, const char *want)
{
    as_gguf *g = NULL;
    as_error err = {{0}};
    int rc = parse_copy(buf, n, "bad.gguf", &g, &err);
    cr_assert_eq(rc, AS_ERR, "accepted a corrupt file (expected an error mentioning '%s')", want ? want : "");
    cr_assert_null(g);
    cr_assert(strlen(err.msg) > 0);
    cr_assert(strstr(err.msg, "bad.gguf: offset ") == err.msg, "message lacks file/offset: %s", err.msg);
    if (want)
        cr_assert(strstr(err.msg, want), "message '%s' does not mention '%s'", err.msg, want);
}

static const char *const sample_tokens[5] = {"<unk>", "<s>", "</s>", "hello", "\xe2\x96\x81world"};
static const float sample_scores[5] = {0, 0, 0, -1.5f, -2.25f};

/* Values for the sample tensors: exactly representable in their types. */
static void f32_vals(float *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = (float)i * 0.25f - 1.0f;
}

static void f16_vals(float *v, int n)
{
    static const float pool[] = {0.0f, -0.0f, 1.0f, -1.5f, 0.125f, 65504.0f, -65504.0f,
                                 5.9604644775390625e-08f /* 2^-24 */, 6.103515625e-05f /* 2^-14 */, 1025.0f,
                                 -3.0f, 0.333251953125f};
    for (int i = 0; i < n; i++)
        v[i] = pool[i % 12];
}

static void bf16_vals(float *v, int n)
{
    static const float pool[] = {1.0f, -0.5f, 256.0f, 1.5f, 0.0f, -3.0f, 3.3895313892515355e38f, 1.1754943508222875e-38f};
    for (int i = 0; i < n; i++)
        v[i] = pool[i % 8];
}

static void q8_vals(float *v, int n)
{
    uint64_t s = 42;
    for (int i = 0; i < n; i++)
        v[i] = ((float)(lcg(&s) % 20001) - 10000.0f) / 997.0f;
    v[5] = 0.0f;
}

static void add_tensor(as_gguf_writer *w, const char *name, as_ggml_type type, uint32_t nd, const uint64_t *ne,
                       const float *vals)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < nd; d++)
        n *= ne[d];
    uint8_t *data = malloc(as_ggml_nbytes(type, n) + 1);
    for (uint64_t i = 0; i < n; i++) {
        if (type == AS_GGML_F32)
            memcpy(data + 4 * i, &vals[i], 4);
        else if (type == AS_GGML_F16 || type == AS_GGML_BF16) {
            uint16_t h = type == AS_GGML_F16 ? as_f32_to_f16(vals[i]) : as_f32_to_bf16(vals[i]);
            data[2 * i] = (uint8_t)h, data[2 * i + 1] = (uint8_t)(h >> 8);
        }
    }
    if (type == AS_GGML_Q8_0)
        as_quantize_q8_0(vals, n, data);
    as_error err;
    cr_assert_eq(as_gguf_writer_add_tensor(w, name, type, nd, ne, data, &err), AS_OK, "%s", err.msg);
    free(data);
}

static const uint64_t ne_q[2] = {8, 2}, ne_k[2] = {4, 3}, ne_v[1] = {6}, ne_up[2] = {64, 3};

/* A small model with a bit of everything; the corpus is cut from it. */
static as_gguf_writer *sample_writer(uint32_t version)
{
    as_gguf_writer *w = as_gguf_writer_new(version);
    float f[192];
    cr_assert(w);
    as_gguf_writer_set_str(w, "general.architecture", "llama");
    as_gguf_writer_set_str(w, "general.name", "tiny test");
    as_gguf_writer_set_u32(w, "general.alignment", 32);
    as_gguf_writer_set_u32(w, "llama.context_length", 128);
    as_gguf_writer_set_u32(w, "llama.embedding_length", 8);
    as_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    as_gguf_writer_set_bool(w, "test.flag_a", true);
    as_gguf_writer_set_i32(w, "test.flag_b", -7);
    as_gguf_writer_set_u64(w, "test.big", 1ull << 40);
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", sample_tokens, 5);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, sample_scores, 5);
    f32_vals(f, 16), add_tensor(w, "blk.0.attn_q.weight", AS_GGML_F32, 2, ne_q, f);
    f16_vals(f, 12), add_tensor(w, "blk.0.attn_k.weight", AS_GGML_F16, 2, ne_k, f);
    bf16_vals(f, 6), add_tensor(w, "blk.0.attn_v.weight", AS_GGML_BF16, 1, ne_v, f);
    q8_vals(f, 192), add_tensor(w, "blk.0.ffn_up.weight", AS_GGML_Q8_0, 2, ne_up, f);
    return w;
}

static uint8_t *sample_bytes(uint32_t version, size_t *n)
{
    as_gguf_writer *w = sample_writer(version);
    uint8_t *buf;
    as_error err;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, n, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    return buf;
}

/* The sample parsed in place (g borrows buf). */
static as_gguf *sample_parsed(uint8_t **buf, size_t *n)
{
    as_gguf *g;
    as_error err;
    *buf = sample_bytes(3, n);
    cr_assert_eq(as_gguf_parse(&g, *buf, *n, "sample.gguf", &err), AS_OK, "%s", err.msg);
    return g;
}

/* file offsets of fields, found through the offsets the parser records */
static size_t kv_type_off(const as_gguf *g, const char *key)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    cr_assert(kv, "no key %s", key);
    return (size_t)kv->offset + 8 + strlen(kv->key);
}

static size_t t_ndims_off(const as_gguf *g, const char *name)
{
    const as_gguf_tensor *t = as_gguf_tensor_find(g, name);
    cr_assert(t, "no tensor %s", name);
    return (size_t)t->info_offset + 8 + strlen(t->name);
}

static size_t t_ne_off(const as_gguf *g, const char *name, int d) { return t_ndims_off(g, name) + 4 + 8 * d; }

static size_t t_type_off(const as_gguf *g, const char *name)
{
    return t_ndims_off(g, name) + 4 + 8 * as_gguf_tensor_find(g, name)->n_dims;
}

static size_t t_offset_off(const as_gguf *g, const char *name) { return t_type_off(g, name) + 4; }

/* ------------------------------------------------------------------ */
/* metadata value types */

Test(gguf, value_type_names)
{
    cr_assert_str_eq(as_gguf_type_name(AS_GGUF_FLOAT64), "float64");
    cr_assert_str_eq(as_gguf_type_name((as_gguf_type)13), "unknown");
}

/* ------------------------------------------------------------------ */
/* round trips */

static void check_sample(const as_gguf *g, uint32_t version)
{
    as_error err;
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    float f = 0;
    bool b = false;
    const char *s = NULL;
    cr_assert_eq(g->version, version);
    cr_assert_eq(g->n_kv, 12);
    cr_assert_eq(g->n_tensors, 4);
    cr_assert_eq(g->data_offset % 32, 0);
    cr_assert_eq(as_gguf_get_str(g, "general.architecture", &s, &err), AS_OK);
    cr_assert_str_eq(s, "llama");
    cr_assert_eq(as_gguf_get_u32(g, "llama.context_length", &u32, &err), AS_OK);
    cr_assert_eq(u32, 128);
    cr_assert_eq(as_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &f, &err), AS_OK);
    cr_assert_eq(f, 1e-5f);
    cr_assert_eq(as_gguf_get_bool(g, "test.flag_a", &b, &err), AS_OK);
    cr_assert(b);
    cr_assert_eq(as_gguf_find(g, "test.flag_b")->v.i64, -7);
    cr_assert_eq(as_gguf_get_u64(g, "test.big", &u64, &err), AS_OK);
    cr_assert_eq(u64, 1ull << 40);
    const as_gguf_kv *tok = as_gguf_find(g, "tokenizer.ggml.tokens");
    cr_assert_eq(tok->type, AS_GGUF_ARRAY);
    cr_assert_eq(tok->arr_type, AS_GGUF_STRING);
    cr_assert_eq(tok->arr_len, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_str_eq(tok->strs[i], sample_tokens[i]);
        cr_assert_eq(tok->str_lens[i], strlen(sample_tokens[i]));
    }
    const as_gguf_kv *sc = as_gguf_find(g, "tokenizer.ggml.scores");
    cr_assert_eq(sc->arr_type, AS_GGUF_FLOAT32);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(as_gguf_arr_f64(sc, (uint64_t)i), sample_scores[i]);
}

static void check_tensor(const as_gguf *g, const char *name, as_ggml_type type, const float *want, uint64_t n,
                         float tol)
{
    const as_gguf_tensor *t = as_gguf_tensor_find(g, name);
    as_error err;
    cr_assert(t, "missing %s", name);
    cr_assert_eq(t->type, type);
    cr_assert_eq(t->n_elements, n);
    cr_assert_eq(t->n_bytes, as_ggml_nbytes(type, n));
    cr_assert_eq((t->data - g->map) % 32, 0);
    float *all = malloc(n * sizeof *all), *row = malloc(t->ne[0] * sizeof *row);
    cr_assert_eq(as_tensor_to_f32(t, all, &err), AS_OK, "%s", err.msg);
    for (uint64_t r = 0; r < as_tensor_rows(t); r++) {
        cr_assert_eq(as_tensor_row_f32(t, r, row, &err), AS_OK, "%s", err.msg);
        for (uint64_t j = 0; j < t->ne[0]; j++) {
            float w = want[r * t->ne[0] + j];
            cr_assert_eq(row[j], all[r * t->ne[0] + j]);
            if (tol == 0)
                cr_assert_eq(row[j], w, "%s[%lu][%lu] = %g, want %g", name, (unsigned long)r, (unsigned long)j,
                             row[j], w);
            else
                cr_assert(fabsf(row[j] - w) <= tol, "%s[%lu] = %g, want %g", name, (unsigned long)j, row[j], w);
        }
    }
    cr_assert_eq(as_tensor_row_f32(t, as_tensor_rows(t), row, &err), AS_ERR);
    cr_assert(strstr(err.msg, "out of range"));
    free(all);
    free(row);
}

static void check_sample_tensors(const as_gguf *g)
{
    float want[192];
    cr_assert_eq(as_gguf_tensor_find(g, "blk.0.attn_q.weight")->ne[1], 2);
    cr_assert_eq(as_gguf_tensor_find(g, "blk.0.attn_k.weight")->n_dims, 2);
    cr_assert_eq(as_gguf_tensor_find(g, "blk.0.attn_v.weight")->ne[1], 1);
    f32_vals(want, 16), check_tensor(g, "blk.0.attn_q.weight", AS_GGML_F32, want, 16, 0);
    f16_vals(want, 12), check_tensor(g, "blk.0.attn_k.weight", AS_GGML_F16, want, 12, 0);
    bf16_vals(want, 6), check_tensor(g, "blk.0.attn_v.weight", AS_GGML_BF16, want, 6, 0);
    /* Q8_0: within half a step of the block scale (plus the scale's own fp16 rounding) */
    q8_vals(want, 192);
    float dmax = 0;
    for (int i = 0; i < 192; i++)
        dmax = fmaxf(dmax, fabsf(want[i]) / 127);
    check_tensor(g, "blk.0.ffn_up.weight", AS_GGML_Q8_0, want, 192, dmax / 2 + 127 * dmax / 2048);
}

Test(gguf, roundtrip_v2_and_v3)
{
    for (uint32_t version = 2; version <= 3; version++) {
        size_t n;
        uint8_t *buf = sample_bytes(version, &n);
        as_gguf *g;
        as_error err;
        cr_assert_eq(as_gguf_parse(&g, buf, n, "rt.gguf", &err), AS_OK, "%s", err.msg);
        check_sample(g, version);
        check_sample_tensors(g);
        as_gguf_close(g);
        free(buf);
    }
}

Test(gguf, q8_0_exact_reference)
{
    size_t n;
    uint8_t *buf = sample_bytes(3, &n);
    as_gguf *g;
    as_error err;
    float x[192], got[192];
    cr_assert_eq(as_gguf_parse(&g, buf, n, "rt.gguf", &err), AS_OK);
    q8_vals(x, 192);
    cr_assert_eq(as_tensor_to_f32(as_gguf_tensor_find(g, "blk.0.ffn_up.weight"), got, &err), AS_OK);
    for (int b = 0; b < 6; b++) { /* ggml's algorithm, computed here */
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[32 * b + j]));
        float d = amax / 127, id = d ? 1.0f / d : 0.0f, d16 = as_f16_to_f32(as_f32_to_f16(d));
        for (int j = 0; j < 32; j++) {
            cr_assert_eq(got[32 * b + j], d16 * roundf(x[32 * b + j] * id), "block %d elem %d", b, j);
            cr_assert(fabsf(got[32 * b + j] - x[32 * b + j]) <= d / 2 + 127 * fabsf(d - d16) + 1e-6f);
        }
    }
    as_gguf_close(g);
    free(buf);
}

Test(gguf, every_scalar_and_array_type)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    int64_t i64 = INT64_MIN + 5;
    double f64 = -1.0 / 3.0;
    uint64_t u64max = UINT64_MAX;
    as_gguf_writer_set_scalar(w, "t.u8", AS_GGUF_UINT8, &u8);
    as_gguf_writer_set_scalar(w, "t.i8", AS_GGUF_INT8, &i8);
    as_gguf_writer_set_scalar(w, "t.u16", AS_GGUF_UINT16, &u16);
    as_gguf_writer_set_scalar(w, "t.i16", AS_GGUF_INT16, &i16);
    as_gguf_writer_set_u32(w, "t.u32", 4000000000u);
    as_gguf_writer_set_i32(w, "t.i32", INT32_MIN);
    as_gguf_writer_set_f32(w, "t.f32", 3.25f);
    as_gguf_writer_set_bool(w, "t.bool", false);
    as_gguf_writer_set_str(w, "t.str", "");
    as_gguf_writer_set_u64(w, "t.u64", u64max);
    as_gguf_writer_set_scalar(w, "t.i64", AS_GGUF_INT64, &i64);
    as_gguf_writer_set_scalar(w, "t.f64", AS_GGUF_FLOAT64, &f64);
    const int16_t ai16[3] = {-1, 2, -32768};
    const uint8_t abool[2] = {1, 0};
    const double af64[2] = {1e300, -0.5};
    const int64_t ai64[2] = {INT64_MAX, -2};
    as_gguf_writer_set_arr(w, "a.i16", AS_GGUF_INT16, ai16, 3);
    as_gguf_writer_set_arr(w, "a.bool", AS_GGUF_BOOL, abool, 2);
    as_gguf_writer_set_arr(w, "a.f64", AS_GGUF_FLOAT64, af64, 2);
    as_gguf_writer_set_arr(w, "a.i64", AS_GGUF_INT64, ai64, 2);
    as_gguf_writer_set_arr(w, "a.empty", AS_GGUF_UINT32, NULL, 0);
    as_gguf_writer_set_arr_str(w, "a.nostr", NULL, 0);
    as_gguf_writer_set_u32(w, "t.u32", 7); /* replaces in place */
    uint8_t *buf;
    size_t n;
    as_gguf *g;
    as_error err;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(n, 32 * ((n + 31) / 32));
    cr_assert_eq(as_gguf_parse(&g, buf, n, "all.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(g->n_kv, 18);
    cr_assert_str_eq(g->kvs[4].key, "t.u32");
    cr_assert_eq(g->kvs[4].v.u64, 7);
    cr_assert_eq(as_gguf_find(g, "t.u8")->v.u64, 200);
    cr_assert_eq(as_gguf_find(g, "t.i8")->v.i64, -100);
    cr_assert_eq(as_gguf_find(g, "t.u16")->v.u64, 60000);
    cr_assert_eq(as_gguf_find(g, "t.i16")->v.i64, -30000);
    cr_assert_eq(as_gguf_find(g, "t.i32")->v.i64, INT32_MIN);
    cr_assert_eq(as_gguf_find(g, "t.f32")->v.f64, 3.25);
    cr_assert_eq(as_gguf_find(g, "t.bool")->v.b, false);
    cr_assert_eq(as_gguf_find(g, "t.str")->str_len, 0);
    cr_assert_str_eq(as_gguf_find(g, "t.str")->str, "");
    cr_assert_eq(as_gguf_find(g, "t.u64")->v.u64, UINT64_MAX);
    cr_assert_eq(as_gguf_find(g, "t.i64")->v.i64, INT64_MIN + 5);
    cr_assert_eq(as_gguf_find(g, "t.f64")->v.f64, -1.0 / 3.0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(as_gguf_arr_i64(as_gguf_find(g, "a.i16"), (uint64_t)i), ai16[i]);
    cr_assert_eq(as_gguf_arr_i64(as_gguf_find(g, "a.bool"), 0), 1);
    cr_assert_eq(as_gguf_arr_f64(as_gguf_find(g, "a.f64"), 0), 1e300);
    cr_assert_eq(as_gguf_arr_i64(as_gguf_find(g, "a.f64"), 0), INT64_MAX); /* clamped, not undefined */
    cr_assert_eq(as_gguf_arr_i64(as_gguf_find(g, "a.i64"), 0), INT64_MAX);
    cr_assert_eq(as_gguf_arr_i64(as_gguf_find(g, "a.i64"), 1), -2);
    cr_assert_eq(as_gguf_find(g, "a.empty")->arr_len, 0);
    cr_assert_eq(as_gguf_find(g, "a.nostr")->arr_len, 0);
    cr_assert_eq(as_gguf_find(g, "a.nostr")->arr_type, AS_GGUF_STRING);
    cr_assert_eq(g->n_tensors, 0);
    as_gguf_close(g);
    free(buf);
    as_gguf_writer_free(w);
}

/* A file assembled byte by byte here, independent of the writer. */
Test(gguf, hand_built_file_matches_writer)
{
    uint8_t h[256] = {0};
    size_t n = 0;
#define PUT32(v) (poke32(h + n, (uint32_t)(v)), n += 4)
#define PUT64(v) (poke64(h + n, (uint64_t)(v)), n += 8)
#define PUTS(s) (PUT64(strlen(s)), memcpy(h + n, s, strlen(s)), n += strlen(s))
    PUT32(0x46554747u), PUT32(2), PUT64(1), PUT64(2);
    PUTS("k.s"), PUT32(AS_GGUF_STRING), PUTS("ab\xc3\xa9");
    PUTS("k.u8"), PUT32(AS_GGUF_UINT8), h[n++] = 9;
    PUTS("w"), PUT32(1), PUT64(2), PUT32(AS_GGML_F32), PUT64(0);
    n = (n + 31) / 32 * 32;
    float v[2] = {1.5f, -2.0f};
    memcpy(h + n, v, 8), n += 8;
    n = (n + 31) / 32 * 32;
    as_gguf *g;
    as_error err;
    cr_assert_eq(as_gguf_parse(&g, h, n, "hand.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(as_gguf_find(g, "k.s")->str, "ab\xc3\xa9");
    cr_assert_eq(as_gguf_find(g, "k.u8")->v.u64, 9);
    cr_assert_eq(as_gguf_tensor_find(g, "w")->n_bytes, 8);
    as_gguf_close(g);

    as_gguf_writer *w = as_gguf_writer_new(2);
    uint8_t u8 = 9;
    uint64_t ne[1] = {2};
    as_gguf_writer_set_str(w, "k.s", "ab\xc3\xa9");
    as_gguf_writer_set_scalar(w, "k.u8", AS_GGUF_UINT8, &u8);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "w", AS_GGML_F32, 1, ne, v, &err), AS_OK);
    uint8_t *buf;
    size_t m;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &m, &err), AS_OK);
    cr_assert_eq(m, n);
    cr_assert(memcmp(buf, h, n) == 0, "the writer's bytes differ from the hand-built file");
    free(buf);
    as_gguf_writer_free(w);
#undef PUT32
#undef PUT64
#undef PUTS
}

Test(gguf, custom_alignment_and_offsets_follow_llama_cpp)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_error err;
    float v[3] = {1, 2, 3};
    uint64_t ne[1] = {3};
    as_gguf_writer_set_u32(w, "general.alignment", 64);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "a", AS_GGML_F32, 1, ne, v, &err), AS_OK);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "b", AS_GGML_F32, 1, ne, v, &err), AS_OK);
    uint8_t *buf;
    size_t n;
    as_gguf *g;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_OK);
    cr_assert_eq(as_gguf_parse(&g, buf, n, "al.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(g->alignment, 64);
    cr_assert_eq(g->data_offset % 64, 0);
    cr_assert_eq(g->tensors[0].offset, 0);
    cr_assert_eq(g->tensors[1].offset, 64); /* the padded end of the previous tensor */
    cr_assert_eq(n, g->data_offset + 128);
    as_gguf_close(g);
    free(buf);
    as_gguf_writer_set_u32(w, "general.alignment", 48);
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_ERR);
    cr_assert(strstr(err.msg, "power-of-two"));
    as_gguf_writer_free(w);
}

Test(gguf, writer_refuses_bad_tensors)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_error err;
    float v[64] = {0};
    uint64_t ne[2] = {33, 1}, ok[1] = {4}, zero[1] = {0};
    char longname[80];
    memset(longname, 'x', 64), longname[64] = '\0';
    cr_assert_eq(as_gguf_writer_add_tensor(w, "q", AS_GGML_Q8_0, 2, ne, v, &err), AS_ERR);
    cr_assert(strstr(err.msg, "multiple"));
    cr_assert_eq(as_gguf_writer_add_tensor(w, longname, AS_GGML_F32, 1, ok, v, &err), AS_ERR);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "z", AS_GGML_F32, 1, zero, v, &err), AS_ERR);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "d", AS_GGML_F32, 5, ok, v, &err), AS_ERR);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "u", (as_ggml_type)99, 1, ok, v, &err), AS_ERR);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "t", AS_GGML_F32, 1, ok, v, &err), AS_OK);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "t", AS_GGML_F32, 1, ok, v, &err), AS_ERR);
    cr_assert(strstr(err.msg, "twice"));
    as_gguf_writer_set_arr(w, "bad", AS_GGUF_STRING, v, 1); /* poisons the writer */
    uint8_t *buf;
    size_t n;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_ERR);
    cr_assert(strstr(err.msg, "'bad'"), "%s", err.msg);
    as_gguf_writer_free(w);
    w = as_gguf_writer_new(1);
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_ERR);
    cr_assert(strstr(err.msg, "version 1"));
    as_gguf_writer_free(w);
}

Test(gguf, typed_getters)
{
    uint8_t *buf;
    size_t n;
    as_gguf *g = sample_parsed(&buf, &n);
    as_error err;
    uint32_t u = 99;
    uint64_t u64;
    float f = 2.0f;
    bool b = false;
    const char *s;
    cr_assert_eq(as_gguf_get_u32(g, "nope", &u, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "sample.gguf: key 'nope': expected a uint32, found nothing (the key is missing)");
    cr_assert_eq(as_gguf_get_u32(g, "general.name", &u, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "sample.gguf: key 'general.name': expected a uint32, found string");
    cr_assert_eq(as_gguf_get_u32(g, "test.flag_b", &u, &err), AS_ERR);
    cr_assert(strstr(err.msg, "int32 -7"), "%s", err.msg);
    cr_assert_eq(as_gguf_get_u32(g, "test.big", &u, &err), AS_ERR);
    cr_assert(strstr(err.msg, "too large"), "%s", err.msg);
    cr_assert_eq(as_gguf_get_u64(g, "test.big", &u64, &err), AS_OK);
    cr_assert_eq(as_gguf_get_f32(g, "llama.context_length", &f, &err), AS_ERR);
    cr_assert_eq(as_gguf_get_str(g, "tokenizer.ggml.tokens", &s, &err), AS_ERR);
    cr_assert(strstr(err.msg, "an array of string"), "%s", err.msg);
    cr_assert_eq(as_gguf_get_bool(g, "llama.context_length", &b, &err), AS_ERR);
    /* _opt: absent leaves the default, present with a wrong type is an error */
    cr_assert_eq(as_gguf_get_u32_opt(g, "nope", &u, &err), AS_OK);
    cr_assert_eq(u, 99);
    cr_assert_eq(as_gguf_get_f32_opt(g, "nope", &f, &err), AS_OK);
    cr_assert_eq(f, 2.0f);
    cr_assert_eq(as_gguf_get_bool_opt(g, "nope", &b, &err), AS_OK);
    cr_assert_eq(as_gguf_get_bool_opt(g, "test.flag_a", &b, &err), AS_OK);
    cr_assert(b);
    cr_assert_eq(as_gguf_get_f32_opt(g, "general.name", &f, &err), AS_ERR);
    cr_assert_eq(as_gguf_get_u32_opt(g, "llama.embedding_length", &u, &err), AS_OK);
    cr_assert_eq(u, 8);
    cr_assert_null(as_gguf_tensor_find(g, "nope"));
    as_gguf_close(g);
    free(buf);
}

/* the types attnscope decodes, as messages list them */
#define SUPPORTED "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS"

Test(gguf, unsupported_type_parses_but_does_not_dequantize)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_error err;
    uint8_t blocks[2 * 66] = {0};
    uint64_t ne[2] = {256, 2};
    cr_assert_eq(as_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", AS_GGML_IQ2_XXS, 2, ne, blocks, &err), AS_OK);
    uint8_t *buf;
    size_t n;
    as_gguf *g;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_OK);
    cr_assert_eq(as_gguf_parse(&g, buf, n, "model.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(g->tensors[0].n_bytes, 132);
    float out[256];
    cr_assert_eq(as_tensor_row_f32(&g->tensors[0], 0, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "model.gguf: tensor 'blk.0.ffn_up.weight' has type IQ2_XXS, which attnscope cannot "
                              "read yet (supported: " SUPPORTED ")");
    cr_assert_eq(as_tensor_to_f32(&g->tensors[0], out, &err), AS_ERR);
    as_gguf_close(g);
    free(buf);
    as_gguf_writer_free(w);
}

/* A tensor built by hand (as a llama2.c view is), not parsed: its type is
 * refused by name with the file and the tensor, and nothing is decoded. */
Test(gguf, undecodable_tensor_is_refused_by_name)
{
    uint8_t blocks[18];
    float out[32];
    as_error err;
    memset(blocks, 0x55, sizeof blocks);
    for (int i = 0; i < 32; i++)
        out[i] = 7.0f;
    as_gguf_tensor t = {.name = "blk.0.attn_q.weight", .n_dims = 1, .ne = {32, 1, 1, 1}, .type = AS_GGML_MXFP4,
                        .n_elements = 32, .n_bytes = 17, .data = blocks, .path = "m.gguf"};
    cr_assert_eq(as_tensor_row_f32(&t, 0, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "m.gguf: tensor 'blk.0.attn_q.weight' has type MXFP4, which attnscope cannot read "
                              "yet (supported: " SUPPORTED ")");
    t.type = (as_ggml_type)99;
    cr_assert_eq(as_tensor_to_f32(&t, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "m.gguf: tensor 'blk.0.attn_q.weight' has type 99 (not a ggml type attnscope "
                              "knows), which attnscope cannot read yet (supported: " SUPPORTED ")");
    for (int i = 0; i < 32; i++)
        cr_assert_eq(out[i], 7.0f, "out[%d] written by a refused read", i);
}

/* ------------------------------------------------------------------ */
/* files on disk */

static char *tmpdir(void)
{
    char *d = strdup("/tmp/attnscope-gguf-XXXXXX");
    cr_assert(mkdtemp(d));
    return d;
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(gguf, write_then_open_from_disk)
{
    char *dir = tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    as_gguf_writer *w = sample_writer(3);
    as_error err;
    as_gguf *g;
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "overwriting: %s", err.msg);
    cr_assert_eq(count_entries(dir), 1, "a temporary file was left behind");
    cr_assert_eq(as_gguf_open(&g, path, &err), AS_OK, "%s", err.msg);
    cr_assert(g->mapped);
    cr_assert_str_eq(g->path, path);
    check_sample(g, 3);
    check_sample_tensors(g);
    as_gguf_close(g);

    /* a truncated file on disk is refused with its path in the message */
    cr_assert_eq(truncate(path, 100), 0);
    cr_assert_eq(as_gguf_open(&g, path, &err), AS_ERR);
    cr_assert_null(g);
    cr_assert(strncmp(err.msg, path, strlen(path)) == 0, "%s", err.msg);
    cr_assert_eq(truncate(path, 0), 0);
    cr_assert_eq(as_gguf_open(&g, path, &err), AS_ERR);
    cr_assert(strstr(err.msg, "empty"), "%s", err.msg);
    cr_assert_eq(as_gguf_open(&g, dir, &err), AS_ERR);
    cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
    unlink(path);
    cr_assert_eq(as_gguf_open(&g, path, &err), AS_ERR);
    cr_assert(strstr(err.msg, "No such file"), "%s", err.msg);

    /* a directory that does not exist: error names the path and errno text */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/missing/model.gguf", dir);
    cr_assert_eq(as_gguf_writer_write(w, bad, &err), AS_ERR);
    cr_assert(strstr(err.msg, bad) && strstr(err.msg, "No such file"), "%s", err.msg);
    cr_assert_eq(count_entries(dir), 0);
    as_gguf_writer_free(w);
    rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ */
/* the malformed corpus */

Test(gguf, every_truncation_is_refused)
{
    size_t n;
    uint8_t *buf = sample_bytes(3, &n);
    as_gguf *g;
    as_error err;
    cr_assert_eq(as_gguf_parse(&g, buf, n, "t.gguf", &err), AS_OK);
    uint64_t data_end = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        uint64_t e = g->data_offset + g->tensors[i].offset + g->tensors[i].n_bytes;
        data_end = e > data_end ? e : data_end;
    }
    as_gguf_close(g);
    for (size_t len = 0; len < data_end; len++)
        expect_reject(buf, len, NULL);
    /* only the zero padding after the last tensor may be missing */
    for (size_t len = (size_t)data_end; len <= n; len++) {
        cr_assert_eq(parse_copy(buf, len, "t.gguf", &g, &err), AS_OK, "len %zu: %s", len, err.msg);
    }
    free(buf);
}

Test(gguf, truncation_messages_name_the_field)
{
    uint8_t *buf;
    size_t n;
    as_gguf *g = sample_parsed(&buf, &n);
    expect_reject(buf, 2, "magic needs 4 bytes, only 2 left");
    expect_reject(buf, 6, "version");
    expect_reject(buf, 12, "tensor count");
    expect_reject(buf, 20, "metadata count");
    expect_reject(buf, 100, "metadata count 12 cannot fit in the 76 bytes left");
    size_t t = kv_type_off(g, "tokenizer.ggml.model");
    expect_reject(buf, t + 4 + 8 + 3, "metadata key 'tokenizer.ggml.model': string length 5 exceeds the 3 bytes left");
    expect_reject(buf, t + 2, "value type needs 4 bytes");
    expect_reject(buf, t_type_off(g, "blk.0.attn_k.weight") + 1, "tensor 'blk.0.attn_k.weight': type");
    expect_reject(buf, (size_t)g->data_offset + 40, "tensor 'blk.0.attn_q.weight' extends past end of file "
                                                  "(needs 64 bytes, 40 left)");
    as_gguf_close(g);
    free(buf);
}

/* a corrupted copy: set a 32- or 64-bit field and expect a rejection */
static void reject32(const uint8_t *buf, size_t n, size_t off, uint32_t v, const char *want)
{
    uint8_t *c = malloc(n);
    memcpy(c, buf, n);
    poke32(c + off, v);
    expect_reject(c, n, want);
    free(c);
}

static void reject64(const uint8_t *buf, size_t n, size_t off, uint64_t v, const char *want)
{
    uint8_t *c = malloc(n);
    memcpy(c, buf, n);
    poke64(c + off, v);
    expect_reject(c, n, want);
    free(c);
}

Test(gguf, header_corruptions)
{
    uint8_t *buf;
    size_t n;
    as_gguf *g = sample_parsed(&buf, &n);
    reject32(buf, n, 0, 0x58554747u, "not a GGUF file");
    reject32(buf, n, 4, 1, "offset 4: unsupported GGUF version 1 (attnscope reads versions 2 and 3)");
    reject32(buf, n, 4, 4, "unsupported GGUF version 4");
    reject32(buf, n, 4, 0x03000000u, "big-endian");
    const uint64_t huge[] = {1ull << 63, UINT64_MAX, 1ull << 32, (uint64_t)n};
    for (int i = 0; i < 4; i++) {
        reject64(buf, n, 8, huge[i], "offset 8: tensor count");
        reject64(buf, n, 16, huge[i], "offset 16: metadata count");
    }
    /* counts that fit but overstate the records present */
    reject64(buf, n, 8, g->n_tensors + 1, NULL);
    reject64(buf, n, 16, g->n_kv + 1, NULL);
    as_gguf_close(g);
    free(buf);
}

Test(gguf, metadata_corruptions)
{
    uint8_t *buf;
    size_t n;
    as_gguf *g = sample_parsed(&buf, &n);
    const as_gguf_kv *k0 = &g->kvs[0];
    const uint64_t huge[] = {1ull << 63, UINT64_MAX, (uint64_t)n};
    for (int i = 0; i < 3; i++)
        reject64(buf, n, (size_t)k0->offset, huge[i], "offset 24: metadata key 0: key length");
    size_t name_t = kv_type_off(g, "general.name");
    for (int i = 0; i < 3; i++)
        reject64(buf, n, name_t + 4, huge[i], "metadata key 'general.name': string length");
    reject32(buf, n, name_t, 13, "value type 13 is not a GGUF type");
    reject32(buf, n, name_t, UINT32_MAX, "value type 4294967295");
    /* a string array of 2^60 elements: refused before any allocation */
    size_t tok_t = kv_type_off(g, "tokenizer.ggml.tokens");
    reject64(buf, n, tok_t + 8, 1ull << 60, "array of 1152921504606846976 strings cannot fit");
    reject64(buf, n, tok_t + 8, UINT64_MAX, "cannot fit");
    reject64(buf, n, tok_t + 8, 6, NULL); /* one more string than present */
    reject64(buf, n, tok_t + 16 + 8 + 5, UINT64_MAX, "element 1 length");
    reject32(buf, n, tok_t + 4, AS_GGUF_ARRAY, "arrays of arrays");
    reject32(buf, n, tok_t + 4, 77, "array element type 77");
    /* a numeric array whose byte size overflows 64 bits */
    size_t sc_t = kv_type_off(g, "tokenizer.ggml.scores");
    reject64(buf, n, sc_t + 8, 1ull << 62, "exceeds");
    reject64(buf, n, sc_t + 8, UINT64_MAX, "exceeds");
    /* alignment: must be a nonzero power-of-two uint32 */
    size_t al_t = kv_type_off(g, "general.alignment");
    reject32(buf, n, al_t + 4, 0, "not a nonzero power of two");
    reject32(buf, n, al_t + 4, 48, "alignment 48");
    reject32(buf, n, al_t, AS_GGUF_INT32, "expected a uint32, found int32");
    /* duplicate key: "test.flag_b" becomes "test.flag_a" */
    const as_gguf_kv *fb = as_gguf_find(g, "test.flag_b");
    uint8_t *c = malloc(n);
    memcpy(c, buf, n);
    c[fb->offset + 8 + strlen("test.flag_")] = 'a';
    expect_reject(c, n, "duplicate key");
    /* a NUL inside a key would hide duplicates from C-string lookups */
    memcpy(c, buf, n);
    c[fb->offset + 8 + 2] = '\0';
    expect_reject(c, n, "NUL");
    free(c);
    as_gguf_close(g);
    free(buf);
}

Test(gguf, tensor_info_corruptions)
{
    uint8_t *buf;
    size_t n;
    as_gguf *g = sample_parsed(&buf, &n);
    const char *q = "blk.0.attn_q.weight", *up = "blk.0.ffn_up.weight";
    reject32(buf, n, t_ndims_off(g, q), 0, "tensor 'blk.0.attn_q.weight': n_dims is 0, expected 1 to 4");
    reject32(buf, n, t_ndims_off(g, q), 5, "n_dims is 5");
    reject32(buf, n, t_ndims_off(g, q), UINT32_MAX, "n_dims");
    reject64(buf, n, t_ne_off(g, q, 0), 0, "ne[0] is 0");
    reject64(buf, n, t_ne_off(g, q, 0), 1ull << 63, "ne[0]");
    reject64(buf, n, t_ne_off(g, q, 1), UINT64_MAX, "ne[1]");
    /* products: one that overflows 64 bits, one whose byte count does */
    uint8_t *c = malloc(n);
    memcpy(c, buf, n);
    poke64(c + t_ne_off(g, q, 0), 1ull << 32), poke64(c + t_ne_off(g, q, 1), 1ull << 32);
    expect_reject(c, n, "more than 2^63 elements");
    memcpy(c, buf, n);
    poke64(c + t_ne_off(g, q, 0), 1ull << 31), poke64(c + t_ne_off(g, q, 1), 1ull << 31);
    expect_reject(c, n, "overflows");
    memcpy(c, buf, n);
    poke64(c + t_ne_off(g, q, 0), 1ull << 20), poke64(c + t_ne_off(g, q, 1), 1ull << 20);
    expect_reject(c, n, "extends past end of file");
    /* a Q8_0 size that fits in 64 bits but not in the file */
    memcpy(c, buf, n);
    poke64(c + t_ne_off(g, up, 0), 1ull << 60), poke64(c + t_ne_off(g, up, 1), 4);
    expect_reject(c, n, "extends past end of file (needs 4899916394579099648 bytes");
    free(c);
    reject64(buf, n, t_ne_off(g, up, 0), 48, "not a multiple of the Q8_0 block size 32");
    reject32(buf, n, t_type_off(g, q), 4, "unknown ggml type 4");
    reject32(buf, n, t_type_off(g, q), 99, "unknown ggml type 99");
    reject32(buf, n, t_type_off(g, q), UINT32_MAX, "unknown ggml type");
    /* data offsets: misaligned, past the end, wrapping, and a tensor overhanging the end */
    uint64_t last = as_gguf_tensor_find(g, up)->offset;
    reject64(buf, n, t_offset_off(g, q), 1, "data offset 1 is not a multiple of the alignment 32");
    reject64(buf, n, t_offset_off(g, q), UINT64_MAX - 31, "points past the end");
    reject64(buf, n, t_offset_off(g, q), 1ull << 63, "points past the end");
    reject64(buf, n, t_offset_off(g, up), last + 32, "tensor 'blk.0.ffn_up.weight' extends past end of file");
    reject64(buf, n, t_offset_off(g, up), n - g->data_offset, "extends past end of file (needs 204 bytes, 0 left)");
    /* name problems */
    const as_gguf_tensor *k = as_gguf_tensor_find(g, "blk.0.attn_k.weight");
    c = malloc(n);
    memcpy(c, buf, n);
    c[k->info_offset + 8 + strlen("blk.0.attn_")] = 'q';
    expect_reject(c, n, "duplicate tensor name");
    memcpy(c, buf, n);
    poke64(c + k->info_offset, UINT64_MAX);
    expect_reject(c, n, "tensor 1: name length 18446744073709551615 exceeds");
    free(c);
    as_gguf_close(g);
    free(buf);
}

/* Random damage to the header area: anything may happen except a crash,
 * an over-read (ASan) or a silent failure. */
Test(gguf, random_corruption_never_crashes)
{
    size_t n;
    uint8_t *buf = sample_bytes(3, &n), *c = malloc(n);
    uint64_t s = 7;
    as_gguf *g;
    as_error err;
    for (int it = 0; it < 3000; it++) {
        memcpy(c, buf, n);
        int flips = 1 + (int)(lcg(&s) % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = lcg(&s) % 700; /* header, metadata and tensor infos */
            c[at] = (uint8_t)(it % 3 == 0 ? 0xff : lcg(&s));
        }
        size_t len = it % 5 == 0 ? lcg(&s) % n : n;
        err.msg[0] = '\0';
        if (parse_copy(c, len, "fuzz.gguf", &g, &err) == AS_ERR)
            cr_assert(strncmp(err.msg, "fuzz.gguf: ", 11) == 0, "%s", err.msg);
    }
    free(c);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* model card */

static char *info_text(const as_gguf *g)
{
    FILE *f = tmpfile();
    cr_assert(f);
    as_gguf_print_info(g, f);
    long len = ftell(f);
    char *text = calloc(1, (size_t)len + 1);
    rewind(f);
    cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return text;
}

Test(gguf, print_info_model_card)
{
    uint8_t *buf;
    size_t n;
    as_gguf *g = sample_parsed(&buf, &n);
    char *text = info_text(g);
    const char *want[] = {"sample.gguf", "GGUF version 3", "architecture  llama", "tiny test",
                          "hyperparameters", "llama.context_length", "128", "vocabulary of 5 tokens",
                          "blk.0.attn_q.weight", "[8, 2]", "blk.0.attn_k.weight", "[4, 3]",
                          "blk.0.attn_v.weight", "[6]", "blk.0.ffn_up.weight", "Q8_0", "[64, 3]", "BF16",
                          "total: 4 tensors", "226 parameters", "metadata",
                          "[string \xc3\x97 5] \"<unk>\", \"<s>\", \"</s>\", \"hello\", \"\xe2\x96\x81world\"",
                          "[float32 \xc3\x97 5] 0, 0, 0, -1.5, -2.25", "1e-05", "true", "-7"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_assert(strstr(text, want[i]), "model card lacks '%s':\n%s", want[i], text);
    /* columns line up: the type column starts at the same place on every tensor row */
    const char *a = strstr(text, "blk.0.attn_q.weight"), *b = strstr(text, "blk.0.attn_k.weight");
    cr_assert_eq(strstr(a, "F32") - a, strstr(b, "F16") - b);
    free(text);
    as_gguf_close(g);
    free(buf);
}

/* A file of any type ggml defines parses and is listed, whether or not
 * attnscope can decode it (only running it is refused, by name). */
Test(gguf, print_info_lists_every_ggml_type)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_error err;
    uint8_t zeros[2 * 292] = {0};
    int n_types = 0;
    for (int t = 0; t < AS_GGML_TYPE_END; t++) {
        const as_ggml_traits *tr = as_ggml_traits_of((as_ggml_type)t);
        if (!tr)
            continue;
        char name[32];
        uint64_t ne[2] = {tr->block_elems, 2};
        snprintf(name, sizeof name, "t%02d", t);
        cr_assert_eq(as_gguf_writer_add_tensor(w, name, (as_ggml_type)t, 2, ne, zeros, &err), AS_OK, "%s: %s",
                     tr->name, err.msg);
        n_types++;
    }
    cr_assert_eq(n_types, 35); /* ggml.h's 43 numbers less the 8 it retired */
    uint8_t *buf;
    size_t n;
    as_gguf *g;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_OK);
    cr_assert_eq(as_gguf_parse(&g, buf, n, "every.gguf", &err), AS_OK, "%s", err.msg);
    char *text = info_text(g);
    long shape_col = -1;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        char row[64], type[16];
        snprintf(row, sizeof row, "\n  %s ", t->name);
        snprintf(type, sizeof type, " %s ", as_ggml_type_name(t->type));
        const char *line = strstr(text, row);
        cr_assert(line && strstr(line, type) && strstr(line, type) < strchr(line + 1, '\n'),
                  "model card lacks %s of type %s:\n%s", t->name, type, text);
        long col = strchr(line, '[') - line; /* the shape column lines up after the longest type name */
        cr_assert(shape_col < 0 || col == shape_col, "%s: shape at column %ld, not %ld", t->name, col, shape_col);
        shape_col = col;
    }
    cr_assert(strstr(text, "IQ2_XXS") && strstr(text, "MXFP4") && strstr(text, "TQ1_0") && strstr(text, "Q2_0"));
    free(text);
    as_gguf_close(g);
    free(buf);
    as_gguf_writer_free(w);
}

Test(gguf, print_info_escapes_and_truncates)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    const char *many[300];
    for (int i = 0; i < 300; i++)
        many[i] = "token";
    as_gguf_writer_set_str(w, "evil.\x1b[31mred", "bell\a and \x1b]0;title\a");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", many, 300);
    as_gguf_writer_set_str(w, "long", "\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81"
                                      "\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81\xe2\x96\x81"
                                      "0123456789012345678901234567890123456789012345678901234567890123456789");
    uint8_t *buf;
    size_t n;
    as_gguf *g;
    as_error err;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_OK);
    cr_assert_eq(as_gguf_parse(&g, buf, n, "evil.gguf", &err), AS_OK, "%s", err.msg);
    char *text = info_text(g);
    cr_assert_null(strchr(text, '\x1b'), "raw escape reached the terminal:\n%s", text);
    cr_assert_null(strchr(text, '\a'));
    cr_assert(strstr(text, "\\x1b[31mred"), "%s", text);
    cr_assert(strstr(text, "[string \xc3\x97 300] \"token\", \"token\""), "%s", text);
    cr_assert(strstr(text, "..."), "%s", text);
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t len = strchr(line, '\n') ? (size_t)(strchr(line, '\n') - line) : strlen(line);
        cr_assert(len < 400, "line too long: %.*s", (int)len, line);
    }
    cr_assert_null(strstr(text, "\xe2\x96..."), "cut inside a UTF-8 sequence");
    free(text);
    as_gguf_close(g);
    free(buf);
    as_gguf_writer_free(w);
}
