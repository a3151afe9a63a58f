/* deepseek2 beyond the fixtures' hooks (test_interp.c holds every
 * tiny-deepseek2* file to PyTorch at every hook, the experts chosen
 * exactly, the KV cache to recomputing): DeepSeek-V3's routing
 * invariants and routing off under its groups, the latent cache against
 * a plain one in `info` (austen-moe's among them), and broken files refused by name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"
#include "helpers.h"

#define V3 "fixtures/tiny-deepseek2-v3moe.gguf"
#define ABSORBED "fixtures/tiny-deepseek2-absorbed.gguf"
#define LEGACY "fixtures/tiny-deepseek2.gguf"
#define PROMPT "prompt-ids 1 5 9 30 41 77 120 200 250 270 288 3 17 64"

static const float *row(as_session *s, const char *name, int pos)
{
    int h = as_program_find_hook(s->prog, name);
    cr_assert_geq(h, 0, "no hook %s", name);
    return as_capture_row(s->cap, h, pos);
}

/* tiny-deepseek2-v3moe's routed layers (1, 2): the weights are the
 * sigmoid of the logits; both chosen experts come from one group of 4
 * (1 of 2 groups used); the gates are their weights over their sum times
 * 2.5; hook_mlp_out = routed sum + shared expert. Routing the first
 * choice off keeps both choices in one group and never takes it. */
Test(mla, deepseek_v3_routing_invariants_and_route_off)
{
    as_session *s = open_session(V3, 64);
    run_ok(s, PROMPT "; finish");
    char n[96];
    int first = -1;
    for (int L = 1; L < 3; L++) {
        for (int p = 0; p < 14; p++) {
#define R(suffix) (snprintf(n, sizeof n, "blocks.%d.%s", L, suffix), row(s, n, p))
            const float *lg = R("mlp.hook_router_logits"), *w = R("mlp.hook_expert_weights");
            const float *ix = R("mlp.hook_expert_indices"), *g = R("mlp.hook_expert_gates");
            const float *ro = R("mlp.hook_routed_out"), *so = R("mlp.shared.hook_out"), *mo = R("hook_mlp_out");
#undef R
            for (int e = 0; e < 8; e++)
                cr_assert_float_eq(w[e], 1.0 / (1.0 + exp(-(double)lg[e])), 1e-6, "layer %d pos %d weight %d", L, p, e);
            int a = (int)ix[0], b = (int)ix[1];
            cr_assert(a != b && a >= 0 && a < 8 && b >= 0 && b < 8, "layer %d pos %d: %d %d", L, p, a, b);
            cr_assert_eq(a / 4, b / 4, "layer %d pos %d: experts %d and %d from two groups", L, p, a, b);
            double sum = (double)w[a] + w[b];
            cr_assert_float_eq(g[0], 2.5 * w[a] / sum, 1e-6, "layer %d pos %d gate 0", L, p);
            cr_assert_float_eq(g[1], 2.5 * w[b] / sum, 1e-6, "layer %d pos %d gate 1", L, p);
            for (int c = 0; c < 32; c++)
                cr_assert_float_eq(mo[c], ro[c] + so[c], 1e-6, "layer %d pos %d: mlp_out[%d]", L, p, c);
            if (L == 1 && p == 0)
                first = a;
        }
    }
    close_session(s);

    as_session *off = open_session(V3, 64);
    snprintf(n, sizeof n, "route 1.%d off; " PROMPT "; finish", first);
    run_ok(off, n);
    for (int p = 0; p < 14; p++) {
        const float *ix = row(off, "blocks.1.mlp.hook_expert_indices", p);
        int a = (int)ix[0], b = (int)ix[1];
        cr_assert(a != first && b != first, "pos %d: expert %d routed off was chosen (%d %d)", p, first, a, b);
        cr_assert(a >= 0 && b >= 0 && a / 4 == b / 4, "pos %d: routed off, chose %d %d", p, a, b);
    }
    close_session(off);
}

/* info's lines from "KV cache:" on (the cache comparison), joined. */
static void info_lines(const char *model, char *text, size_t cap)
{
    as_session *s = open_session(model, 64);
    FILE *out = tmpfile(), *saved = s->out;
    cr_assert(out);
    s->out = out;
    run_ok(s, "info");
    s->out = saved;
    rewind(out);
    text[0] = '\0';
    char buf[1024];
    bool on = false;
    size_t len = 0;
    while (fgets(buf, sizeof buf, out)) {
        on = on || !strncmp(buf, "KV cache:", 9);
        if (on && len < cap)
            len += (size_t)snprintf(text + len, cap - len, "%s", buf);
    }
    fclose(out);
    close_session(s);
}

/* MLA caches a position, a layer, the normed latent (kv_lora_rank) and the
 * rotary key every head shares (rope.dimension_count), against a plain
 * cache's n_head x (key_length + value_length): the tiny files' 12 + 4 =
 * 16 against 4 x (12 + 6) = 72 (4.5x) in either layout; what attnscope
 * itself caches said apart: the absorbed file's k [1, 16] and v [1, 12]
 * (84 over 3 layers), the legacy file's expanded keys and values (144
 * over 2). */
Test(mla, info_compares_the_latent_cache_with_a_plain_one)
{
    char t[4096];
    info_lines(ABSORBED, t, sizeof t);
    cr_assert(strstr(t, "12 + 4 = 16 values a layer, 48 over 3 layers") &&
              strstr(t, "4 x (k 12 + v 6) = 72 a layer, 216 (4.5x the latent's)") &&
              strstr(t, "own cache as it runs this file: 84 values") && strstr(t, "absorbed form"), "%s", t);
    info_lines(LEGACY, t, sizeof t);
    cr_assert(strstr(t, "12 + 4 = 16 values a layer, 32 over 2 layers") &&
              strstr(t, "4 x (k 12 + v 6) = 72 a layer, 144 (4.5x the latent's)") &&
              strstr(t, "own cache as it runs this file: 144 values") && strstr(t, "legacy attn_kv_b"), "%s", t);
    info_lines("fixtures/tiny-llama.gguf", t, sizeof t);
    cr_assert_str_empty(t, "a plain model says nothing of it: %s", t);
}

/* issue #33: `info` said austen-moe's latent cache saved nothing (2560
 * against 2560, 1.0x), comparing the expanded keys and values the legacy
 * layout keeps with themselves. Its hyperparameters: kv_lora_rank 64,
 * rope 16, 8 heads of key_length 48 and value_length 32, 4 layers: MLA
 * caches 80 a layer against 640 (8.0x); grouped-query with 2 kv heads
 * 160, multi-query 80. */
Test(mla, info_gives_austen_moe_the_latent_cache_it_saves)
{
    char t[4096];
    info_lines("../models/austen-moe.gguf", t, sizeof t);
    cr_assert(strstr(t, "64 + 16 = 80 values a layer, 320 over 4 layers (1.25 KiB a token in float32)"), "%s", t);
    cr_assert(strstr(t, "8 x (k 48 + v 32) = 640 a layer, 2560 (8.0x the latent's)"), "%s", t);
    cr_assert(strstr(t, "2 kv heads of 4 query heads each: 160 a layer, 640 (2.0x)"), "%s", t);
    cr_assert(strstr(t, "1 kv head: 80 a layer, 320 (1.0x)"), "%s", t);
    cr_assert(!strstr(t, "2560 (1.0x)"), "%s", t);
}

static void load_edited(const char *file, const char *skip_key, const char *drop, const char *u32_key, uint32_t v,
                        char *msg, size_t cap)
{
    as_gguf *g;
    as_gguf_writer *w = edit_gguf(file, skip_key, drop, &g);
    if (u32_key)
        as_gguf_writer_set_u32(w, u32_key, v);
    load_refused(w, g, msg, cap);
}

Test(mla, broken_files_are_refused_by_name)
{
    char msg[1024];
    load_edited(LEGACY, "deepseek2.attention.kv_lora_rank", NULL, NULL, 0, msg, sizeof msg);
    cr_assert(strstr(msg, "deepseek2.attention.kv_lora_rank is missing"), "%s", msg);
    load_edited(LEGACY, "deepseek2.attention.key_length", NULL, NULL, 0, msg, sizeof msg);
    cr_assert(strstr(msg, "deepseek2.attention.key_length is missing"), "%s", msg);
    load_edited(LEGACY, NULL, NULL, "deepseek2.rope.dimension_count", 12, msg, sizeof msg);
    cr_assert(strstr(msg, "rope.dimension_count = 12 leaves no part without rotary"), "%s", msg);
    load_edited(LEGACY, NULL, "blk.1.attn_kv_b.weight", NULL, 0, msg, sizeof msg);
    cr_assert(strstr(msg, "tensor 'blk.1.attn_kv_b.weight' is missing"), "%s", msg);
    load_edited(ABSORBED, NULL, "blk.0.attn_k_b.weight", NULL, 0, msg, sizeof msg);
    cr_assert(strstr(msg, "tensor 'blk.0.attn_k_b.weight' is missing"), "%s", msg);
    load_edited(ABSORBED, NULL, NULL, "deepseek2.attention.value_length_mla", 8, msg, sizeof msg);
    cr_assert(strstr(msg, "blk.0.attn_v_b.weight"), "%s", msg);
    load_edited(V3, "deepseek2.expert_count", NULL, NULL, 0, msg, sizeof msg);
    cr_assert(strstr(msg, "deepseek2.expert_count is missing"), "%s", msg);
    load_edited(V3, NULL, NULL, "deepseek2.expert_group_count", 3, msg, sizeof msg);
    cr_assert(strstr(msg, "expert_group_count = 3") && strstr(msg, "do not fit 8 experts"), "%s", msg);
    load_edited(V3, NULL, NULL, "deepseek2.expert_gating_func", 7, msg, sizeof msg);
    cr_assert(strstr(msg, "deepseek2.expert_gating_func = 7 is out of range"), "%s", msg);
    load_edited(V3, NULL, "blk.2.ffn_up_shexp.weight", NULL, 0, msg, sizeof msg);
    cr_assert(strstr(msg, "tensor 'blk.2.ffn_up_shexp.weight' is missing"), "%s", msg);
}
