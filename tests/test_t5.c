/* T5 (src/arch_t5.c) beyond the hook-by-hook comparison of
 * tests/test_interp.c: the relative position buckets against values
 * worked by hand from the definition, the one bias table every layer
 * shares, the decoder start token, a broken file refused by name and the
 * encoder alone refusing what needs a decoder. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

#define T5 "fixtures/tiny-t5"
#define T5ENC "fixtures/tiny-t5encoder"

/* Buckets of key - query worked by hand: half the buckets a side when
 * bidirectional (keys after the query offset by the half), the first half
 * of a side exact, then exact + floor(ln(dist / exact) / ln(128 / exact) ·
 * (side - exact)), at most the side's last. 32 buckets both ways: side 16,
 * exact 8; e.g. dist 20: 8 + floor(ln 2.5 / ln 16 · 8) = 8 + floor(2.64) =
 * 10; dist 16: 8 + floor(ln 2 / ln 16 · 8) = 8 + 2 exactly (a boundary,
 * where a careless float rounding would give 9). Causal, 32: exact 16;
 * dist 32: 16 + floor(ln 2 / ln 8 · 16) = 16 + 5. */
Test(t5, buckets_are_the_papers)
{
    as_rel_spec both = {32, 128, true}, causal = {32, 128, false}, small = {8, 128, true};
    static const int rel[] = {-200, -128, -64, -20, -16, -9, -8, -1, 0, 1, 7, 8, 12, 16, 32, 64, 200};
    static const int want_both[] = {15, 15, 14, 10, 10, 8, 8, 1, 0, 17, 23, 24, 25, 26, 28, 30, 31};
    static const int want_causal[] = {31, 31, 26, 17, 16, 9, 8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    /* 8 both ways: side 4, exact 2; dist 15: 2 + floor(ln 7.5 / ln 64 · 2) = 2 + 0; dist 16: 2 + 1 */
    static const int want_small[] = {3, 3, 3, 3, 3, 2, 2, 1, 0, 5, 6, 6, 6, 7, 7, 7, 7};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        /* key - query = rel: query 300, key 300 + rel */
        cr_assert_eq(as_rel_bucket(&both, 300, 300 + rel[i]), want_both[i], "both ways, %d: %d", rel[i],
                     as_rel_bucket(&both, 300, 300 + rel[i]));
        cr_assert_eq(as_rel_bucket(&causal, 300, 300 + rel[i]), want_causal[i], "causal, %d: %d", rel[i],
                     as_rel_bucket(&causal, 300, 300 + rel[i]));
        cr_assert_eq(as_rel_bucket(&small, 300, 300 + rel[i]), want_small[i], "8 buckets, %d: %d", rel[i],
                     as_rel_bucket(&small, 300, 300 + rel[i]));
    }
}

static float *hook_copy(as_session *s, const char *name, size_t *n)
{
    int h = as_program_find_hook(s->prog, name);
    cr_assert_geq(h, 0, "no hook %s", name);
    *n = as_capture_count(s->cap, h, s->cap->filled[h]);
    float *v = malloc(*n * sizeof *v);
    as_capture_copy(s->cap, h, s->cap->filled[h], v);
    return v;
}

/* The files hold the first layer's table only: every layer's bias is it,
 * bit for bit; cross-attention has none. */
Test(t5, every_layer_adds_the_first_layers_bias)
{
    as_session *s = open_session(T5 ".gguf", 64);
    run_ok(s, "source-ids 1 5 6 7 8 9 10 11 12 13; prompt-ids 2 5 6 7; finish");
    const char *stacks[2] = {"encoder", "decoder"};
    for (int k = 0; k < 2; k++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "%s.0.attn.hook_position_bias", stacks[k]);
        snprintf(b, sizeof b, "%s.1.attn.hook_position_bias", stacks[k]);
        size_t na, nb;
        float *va = hook_copy(s, a, &na), *vb = hook_copy(s, b, &nb);
        cr_assert_eq(na, nb);
        cr_assert_eq(memcmp(va, vb, na * sizeof *va), 0, "%s differs from %s", b, a);
        free(va);
        free(vb);
    }
    cr_assert_eq(as_program_find_hook(s->prog, "decoder.0.cross_attn.hook_position_bias"), -1);
    const as_attn *a = as_program_attn(s->prog, as_program_find_hook(s->prog, "encoder.1.attn.hook_attn_scores"));
    cr_assert(a && a->bias >= 0 && a->scale == 1.0f, "the encoder's scores: unscaled, with the bias");
    close_session(s);
}

/* Without a prompt the decoder starts from decoder_start_token_id (2 in
 * tiny-t5, 0 in tiny-t5-relu: not the BOS either time). */
Test(t5, the_decoder_starts_from_its_start_token)
{
    const char *files[2] = {T5 ".gguf", "fixtures/tiny-t5-relu.gguf"};
    int want[2] = {2, 0};
    for (int i = 0; i < 2; i++) {
        as_session *s = open_session(files[i], 64);
        run_ok(s, "source-ids 1 5 6 7; finish");
        cr_assert_eq(s->prog->start_token, want[i]);
        cr_assert_eq(s->it->st[s->prog->out_stream].n_tokens, 1);
        cr_assert_eq(s->it->st[s->prog->out_stream].tokens[0], want[i], "%s starts from %d", files[i],
                     s->it->st[s->prog->out_stream].tokens[0]);
        close_session(s);
    }
}

/* A copy of a fixture without the key `no_key` and the tensor `drop`, one
 * u32 key set; loads it and returns the error message. */
static void load_edited(const char *file, const char *no_key, const char *key, uint32_t value, const char *drop,
                        char *msg, size_t cap)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, file, &err), AS_OK, "%s", err.msg);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (!no_key || strcmp(g->kvs[i].key, no_key))
            as_gguf_writer_copy_kv(w, &g->kvs[i]);
    if (key)
        as_gguf_writer_set_u32(w, key, value);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (!drop || strcmp(t->name, drop))
            cr_assert_eq(as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err), AS_OK);
    }
    char path[] = "/tmp/attnscope-t5-XXXXXX.gguf";
    close(mkstemps(path, 5));
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);
    as_model *m = NULL;
    int rc = as_model_load(&m, path, &err);
    unlink(path);
    as_model_free(m);
    cr_assert_neq(rc, AS_OK, "the edited file loaded");
    snprintf(msg, cap, "%s", err.msg);
}

Test(t5, broken_files_are_refused_by_name)
{
    char msg[1024];
    load_edited(T5 ".gguf", NULL, NULL, 0, "enc.blk.0.attn_rel_b.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "enc.blk.0.attn_rel_b.weight") && strstr(msg, "missing"), "%s", msg);
    load_edited(T5 ".gguf", NULL, NULL, 0, "dec.blk.1.cross_attn_o.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "dec.blk.1.cross_attn_o.weight"), "%s", msg);
    load_edited(T5 ".gguf", "t5.attention.relative_buckets_count", NULL, 0, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "t5.attention.relative_buckets_count") && strstr(msg, "missing"), "%s", msg);
    load_edited(T5 ".gguf", NULL, "t5.attention.relative_buckets_count", 16, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "attn_rel_b"), "a table of 8 buckets where the key says 16: %s", msg);
    load_edited(T5 ".gguf", NULL, "t5.attention.relative_buckets_count", 2, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "relative_buckets_count = 2"), "%s", msg);
    load_edited(T5 ".gguf", NULL, "t5.decoder_start_token_id", 5000, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "decoder_start_token_id = 5000") && strstr(msg, "vocabulary"), "%s", msg);
    load_edited(T5 ".gguf", NULL, "t5.attention.key_length", 8, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "key_length = 8") && strstr(msg, "value_length = 6"), "%s", msg);
    load_edited(T5 ".gguf", "t5.attention.value_length", "t5.attention.key_length", 8, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "attn_q.weight"), "heads of 8 where the file's are 6: %s", msg);
    load_edited(T5 ".gguf", NULL, "t5.attention.head_count_kv", 2, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "head_count_kv = 2"), "%s", msg);
    load_edited(T5ENC ".gguf", NULL, NULL, 0, "enc.output_norm.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "enc.output_norm.weight"), "%s", msg);
}

/* The encoder alone: no source, no generation; its output is its final
 * norm, and the encoder-decoder's commands say so. */
Test(t5, the_encoder_alone_says_what_it_lacks)
{
    as_session *s = open_session(T5ENC ".gguf", 64);
    char msg[1024];
    cr_assert_neq(run_cmd(s, "source-ids 1 2", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "has no source"), "%s", msg);
    run_ok(s, "prompt-ids 1 5 6 7; finish");
    cr_assert_neq(run_cmd(s, "gen 2", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "encoder"), "%s", msg);
    cr_assert_neq(run_cmd(s, "embed", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "encoder_final_ln.hook_normalized"), "%s", msg);
    cr_assert_eq(s->prog->ops[s->prog->n_ops - 1].out, as_program_find_hook(s->prog, "encoder_final_ln.hook_normalized"));
    close_session(s);
    s = open_session(T5 ".gguf", 64);
    cr_assert_neq(run_cmd(s, "gen 2", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "no source yet"), "%s", msg);
    run_ok(s, "source-ids 1 5 6; finish");
    cr_assert_neq(run_cmd(s, "lens", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "two stacks"), "%s", msg);
    close_session(s);
}
