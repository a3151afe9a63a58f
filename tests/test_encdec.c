/* The original encoder-decoder Transformer (src/arch_transformer.c) beyond
 * the hook-by-hook comparison of tests/test_interp.c: a broken file is
 * refused by name, and the instruments that do not apply say why. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

#define ENCDEC "fixtures/tiny-transformer"

/* A copy of tiny-transformer with one u32 key set and the tensor named
 * `drop` left out; loads it and returns the error message. */
static void load_edited(const char *key, uint32_t value, const char *drop, char *msg, size_t cap)
{
    as_gguf *g;
    as_gguf_writer *w = edit_gguf(ENCDEC ".gguf", NULL, drop, &g);
    if (key)
        as_gguf_writer_set_u32(w, key, value);
    load_refused(w, g, msg, cap);
}

Test(encdec, broken_files_are_refused_by_name)
{
    char msg[1024];
    load_edited(NULL, 0, "dec.blk.1.cross_attn_k.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "dec.blk.1.cross_attn_k.weight") && strstr(msg, "missing"), "%s", msg);
    load_edited(NULL, 0, "enc.output_norm.bias", msg, sizeof msg);
    cr_assert(strstr(msg, "enc.output_norm.bias"), "%s", msg);
    load_edited(NULL, 0, "dec.blk.2.ffn_norm.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "dec.blk.2.ffn_norm.weight"), "%s", msg);
    load_edited("transformer.decoder_start_token_id", 5000, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "decoder_start_token_id = 5000") && strstr(msg, "vocabulary"), "%s", msg);
    load_edited("transformer.decoder_block_count", 0, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "decoder_block_count = 0"), "%s", msg);
    load_edited("transformer.decoder_block_count", 4, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "dec.blk.3."), "a fourth decoder block the file lacks: %s", msg);
    load_edited("transformer.attention.head_count_kv", 2, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "head_count_kv = 2"), "%s", msg);
}

/* Post-LN and two stacks: the lens and DLA refuse, and say why. */
Test(encdec, lens_and_dla_say_why_they_do_not_apply)
{
    as_session *s = open_session(ENCDEC ".gguf", 64);
    char msg[1024];
    run_ok(s, "source-ids 1 275 286");
    run_ok(s, "finish");
    cr_assert_neq(run_cmd(s, "lens", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "Post-LN"), "%s", msg);
    cr_assert_neq(run_cmd(s, "dla 5", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "Post-LN"), "%s", msg);
    close_session(s);
}

/* Greedy generation, which reuses the encoder's output and the decoder's
 * KV cache, against one fresh pass over the source and the tokens it
 * produced: each generated token is the argmax of the fresh pass's logits
 * at the position before it, and the last logits agree to 1e-5 of the
 * largest. */
Test(encdec, generation_equals_a_fresh_pass_over_its_tokens)
{
    as_session *a = open_session(ENCDEC ".gguf", 64), *b = open_session(ENCDEC ".gguf", 64);
    run_ok(a, "source-ids 1 275 286 287 288 285 279 276");
    run_ok(a, "gen 5");
    int n = a->it->out->n_tokens;
    cr_assert_eq(n, 6, "the start token and 5 generated");
    char cmd[256] = "prompt-ids";
    for (int i = 0; i < n; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %d", a->it->out->tokens[i]);
    run_ok(b, "source-ids 1 275 286 287 288 285 279 276");
    run_ok(b, cmd);
    run_ok(b, "finish");
    int V = a->model->cfg.n_vocab, hl = as_program_find_hook(b->prog, "unembed.hook_out");
    cr_assert_eq(b->cap->filled[hl], n);
    for (int i = 0; i + 1 < n; i++) {
        const float *row = as_capture_row(b->cap, hl, i);
        int best = 0;
        for (int j = 1; j < V; j++)
            best = row[j] > row[best] ? j : best;
        cr_assert_eq(a->it->out->tokens[i + 1], best, "position %d: generated %d, the fresh pass's argmax %d", i,
                     a->it->out->tokens[i + 1], best);
    }
    const float *la = as_interp_logits(a->it), *lb = as_interp_logits(b->it);
    cr_assert(la && lb);
    double worst = 0, big = 0;
    for (int j = 0; j < V; j++) {
        worst = fmax(worst, fabs((double)la[j] - lb[j]));
        big = fmax(big, fabs((double)lb[j]));
    }
    cr_assert_leq(worst, 1e-5 * big, "last logits differ by %g (largest %g)", worst, big);
    close_session(a);
    close_session(b);
}

/* Instruments act on the context's own stream (the decoder); a block the
 * decoder lacks (tiny-transformer-sep: 3 encoder blocks, 2 decoder blocks)
 * is named, and patching, whose other run would need a source, refuses. */
Test(encdec, instruments_name_the_decoders_blocks)
{
    as_session *s = open_session(ENCDEC "-sep.gguf", 64);
    char msg[1024];
    run_ok(s, "source-ids 1 275 286");
    run_ok(s, "finish");
    cr_assert_neq(run_cmd(s, "ablate 2.1 zero", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "decoder stream has no block 2"), "%s", msg);
    cr_assert_neq(run_cmd(s, "ablate mlp 2", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "decoder stream has no block 2"), "%s", msg);
    cr_assert_neq(run_cmd(s, "export norms 2 /tmp/never.png", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "decoder stream has no block 2"), "%s", msg);
    run_ok(s, "ablate 1.1 zero");
    cr_assert_eq(s->prog->hooks[s->it->rules[0].hook].stream, s->prog->out_stream);
    cr_assert_str_eq(s->prog->hooks[s->it->rules[0].hook].name, "decoder.1.attn.hook_z");
    cr_assert_neq(run_cmd(s, "patch decoder.0.hook_resid_pre from \"a\"", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "would need a source"), "%s", msg);
    close_session(s);
}

/* Without a capture budget the hooks that are not kept share working
 * buffers (one per kind and stream): the encoder's memory, the decoder's
 * self- and cross-attention q, scores and z must not overwrite each other.
 * The same logits and tokens as with everything captured, to the bit. */
Test(encdec, capture_off_gives_the_same_logits)
{
    as_session *a = open_session(ENCDEC "-sep.gguf", 64), *b = open_session(ENCDEC "-sep.gguf", 0);
    const char *cmds[] = {"source-ids 1 275 286 287 288 285 279 276", "prompt-ids 2 275 279", "gen 4"};
    for (int i = 0; i < 3; i++) {
        run_ok(a, cmds[i]);
        run_ok(b, cmds[i]);
    }
    cr_assert(b->cap->n_dropped > 0, "budget 0 drops hooks");
    cr_assert_eq(a->it->out->n_tokens, b->it->out->n_tokens);
    cr_assert_eq(memcmp(a->it->out->tokens, b->it->out->tokens, (size_t)a->it->out->n_tokens * 4), 0);
    cr_assert_eq(memcmp(as_interp_logits(a->it), as_interp_logits(b->it), (size_t)a->model->cfg.n_vocab * 4), 0);
    close_session(a);
    close_session(b);
}
