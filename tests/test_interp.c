/* The interpreter against the PyTorch reference (tests/fixtures, made by
 * models/recipes/make_fixtures.py from an independent PyTorch forward pass),
 * and its own invariants: stepping equals running, the KV cache equals
 * recomputing, back restores state, thread counts agree. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "helpers.h"

/* The table of architectures: one row each, and every check below runs
 * on every row (fixtures from models/recipes/make_fixtures.py). */
static const char *models[] = {
    "fixtures/tiny-gpt2", "fixtures/tiny-llama", "fixtures/tiny-qwen2", "fixtures/tiny-llama-yarn",
    "fixtures/tiny-llama3", "fixtures/tiny-mistral", "fixtures/tiny-qwen3",
    "fixtures/tiny-phi3", "fixtures/tiny-gemma", "fixtures/tiny-gemma2", "fixtures/tiny-gemma3", "fixtures/tiny-mixtral",
    "fixtures/tiny-mixtral-tie", "fixtures/tiny-qwen2moe", "fixtures/tiny-deepseek2", "fixtures/tiny-deepseek2-qlora",
    "fixtures/tiny-deepseek2-v3moe", "fixtures/tiny-deepseek2-v2moe", "fixtures/tiny-deepseek2-absorbed",
    "fixtures/tiny-deepseek2-yarn",
    "fixtures/tiny-bert",
    "fixtures/tiny-nomic-bert", "fixtures/tiny-transformer", "fixtures/tiny-transformer-sep", "fixtures/tiny-vit",
    "fixtures/tiny-t5", "fixtures/tiny-t5-relu", "fixtures/tiny-t5encoder",
    /* a shipped model: models/recipes/export_bert.py's float64 reference
     * pass over its trained weights (the .gguf is a link to models/) */
    "fixtures/models/austen-bert",
    /* models/recipes/train_deen.py: nn.Transformer's own modules in
     * float64 over de-en's trained weights, a German compound and its
     * English */
    "fixtures/models/de-en",
    /* models/recipes/train_moe.py: reference.DeepSeek2 in float64 over
     * austen-moe's trained weights (MLA, a dense layer, three of 8 routed
     * experts + 1 shared), the experts chosen included */
    "fixtures/models/austen-moe",
};
#define N_MODELS (sizeof models / sizeof models[0])

/* Criterion runs each test in a fresh process (addresses differ): rows
 * are passed by index. */
static struct criterion_test_params model_rows(void)
{
    static int rows[N_MODELS];
    for (size_t i = 0; i < N_MODELS; i++)
        rows[i] = (int)i;
    return cr_make_param_array(int, rows, N_MODELS);
}

/* Tolerances (max abs diff) per hook. Values are O(1) except scores and
 * logits (up to ~13), whose float32 rounding grows with magnitude; the
 * fixtures are exact float64 results for the stored float32 weights. An
 * encoder-decoder's fixture (a source.npy beside it) is held to 1e-4 at
 * every hook, scores and logits too (measured: under 5e-6). */
static double tolerance(const char *dir, const char *hook)
{
    char source[256];
    /* the experts chosen (int32): exactly the reference's, ties included */
    if (strstr(hook, "hook_expert_indices"))
        return 0;
    snprintf(source, sizeof source, "%s/source.npy", dir);
    if ((strstr(hook, "hook_attn_scores") || strstr(hook, "unembed")) && access(source, R_OK) != 0)
        return 2e-4;
    return 1e-4;
}

/* An encoder-decoder's fixture has a source too (source.npy): the
 * encoder's ids, set with source-ids. */
static void load_source(as_session *s, const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/source.npy", dir);
    run_npy_ids(s, "source-ids", path, true);
}

static void load_prompt(as_session *s, const char *dir)
{
    char path[256], cmd[1024];
    /* A vision model's fixture is an image, read by the `image` command. */
    snprintf(path, sizeof path, "%s/image.png", dir);
    if (access(path, R_OK) == 0) {
        snprintf(cmd, sizeof cmd, "image %s", path);
        run_ok(s, cmd);
        return;
    }
    load_source(s, dir);
    snprintf(path, sizeof path, "%s/tokens.npy", dir);
    run_npy_ids(s, "prompt-ids", path, false);
    /* An encoder's fixture is a sentence pair: its token types too. */
    snprintf(path, sizeof path, "%s/types.npy", dir);
    run_npy_ids(s, "token-types", path, true);
}

static float *hook_values(as_session *s, const char *name, size_t *count)
{
    int h = as_program_find_hook(s->prog, name);
    cr_assert_geq(h, 0, "no hook %s", name);
    int n = s->cap->filled[h];
    *count = as_capture_count(s->cap, h, n);
    float *v = malloc(*count * sizeof *v);
    as_capture_copy(s->cap, h, n, v);
    return v;
}

static void compare_all_hooks(const char *dir)
{
    char gguf[256];
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    as_session *s = open_session(gguf, 64);
    load_prompt(s, dir);
    run_ok(s, "finish");
    int checked = 0;
    for (int h = 0; h < s->prog->n_hooks; h++) {
        const char *name = s->prog->hooks[h].name;
        char path[256];
        npy ref;
        snprintf(path, sizeof path, "%s/%s.npy", dir, name);
        cr_assert_eq(npy_read(path, &ref), 0, "fixture missing for hook %s", name);
        size_t count;
        float *got = hook_values(s, name, &count);
        cr_assert_eq(count, ref.count, "%s: %zu values, fixture has %zu", name, count, ref.count);
        size_t shape[3];
        int nd = as_capture_shape(s->cap, h, s->cap->filled[h], shape);
        cr_assert_eq(nd, ref.ndim, "%s: %d dims, fixture has %d", name, nd, ref.ndim);
        for (int d = 0; d < nd; d++)
            cr_assert_eq(shape[d], ref.shape[d], "%s: dim %d is %zu, fixture %zu", name, d, shape[d],
                         ref.shape[d]);
        double worst = 0;
        for (size_t i = 0; i < count; i++) {
            if (isinf(ref.f[i])) {
                cr_assert(isinf(got[i]) && got[i] < 0, "%s[%zu]: masked entry is %g", name, i, got[i]);
                continue;
            }
            worst = fmax(worst, fabs((double)got[i] - ref.f[i]));
        }
        cr_expect_leq(worst, tolerance(dir, name), "%s: max abs diff %.3g > %.1g", name, worst, tolerance(dir, name));
        free(got);
        npy_free(&ref);
        checked++;
    }
    /* Every fixture is a hook we have (plus tokens.npy, or an image's
     * pixels.npy, and types.npy or source.npy). */
    char types[256], source[256];
    snprintf(types, sizeof types, "%s/types.npy", dir);
    snprintf(source, sizeof source, "%s/source.npy", dir);
    int fixtures = -(access(types, R_OK) == 0) - (access(source, R_OK) == 0);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        fixtures += strstr(e->d_name, ".npy") != NULL;
    closedir(d);
    cr_assert_eq(checked + 1, fixtures, "%d hooks checked, %d fixtures", checked, fixtures);
    close_session(s);
}

ParameterizedTestParameters(interp, every_hook_matches_pytorch) { return model_rows(); }
ParameterizedTest(int *row, interp, every_hook_matches_pytorch) { compare_all_hooks(models[*row]); }

/* The same on the narrower vector kernels: the run above uses the widest
 * this CPU has, and a user's CPU may run any of them. */
ParameterizedTestParameters(interp, every_hook_matches_pytorch_with_avx2_kernels) { return model_rows(); }
ParameterizedTest(int *row, interp, every_hook_matches_pytorch_with_avx2_kernels)
{
    if (use_kernels(1))
        compare_all_hooks(models[*row]);
}
ParameterizedTestParameters(interp, every_hook_matches_pytorch_with_generic_kernels) { return model_rows(); }
ParameterizedTest(int *row, interp, every_hook_matches_pytorch_with_generic_kernels)
{
    if (use_kernels(0))
        compare_all_hooks(models[*row]);
}

/* Every captured hook of two sessions must be identical to the bit (tol
 * 0), or within tol, relative for values above 1 (a trained model's
 * latents reach 30, where float32 sums of another order differ by a few
 * ulps of 4e-6). */
static void assert_same_capture(as_session *a, as_session *b, double tol)
{
    for (int h = 0; h < a->prog->n_hooks; h++) {
        const char *name = a->prog->hooks[h].name;
        cr_assert_eq(a->cap->filled[h], b->cap->filled[h], "%s: filled %d vs %d", name,
                     a->cap->filled[h], b->cap->filled[h]);
        size_t na, nb;
        float *va = hook_values(a, name, &na), *vb = hook_values(b, name, &nb);
        cr_assert_eq(na, nb);
        if (tol == 0) {
            cr_assert_eq(memcmp(va, vb, na * sizeof *va), 0, "%s differs", name);
        } else {
            for (size_t i = 0; i < na; i++)
                if (!isinf(va[i]))
                    cr_assert_leq(fabs(va[i] - vb[i]), tol * fmax(1.0, fabs(va[i])), "%s[%zu]: %.9g vs %.9g", name,
                                  i, va[i], vb[i]);
        }
        free(va);
        free(vb);
    }
}

static void step_equals_run(const char *dir)
{
    char gguf[256];
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    as_session *run = open_session(gguf, 64), *step = open_session(gguf, 64);
    load_prompt(run, dir);
    load_prompt(step, dir);
    run_ok(run, "finish");
    int ops = 0;
    do {
        run_ok(step, "step");
        ops++;
    } while (step->it->in_pass);
    cr_assert_eq(ops, step->prog->n_ops);
    assert_same_capture(run, step, 0);
    close_session(run);
    close_session(step);
}

ParameterizedTestParameters(interp, stepping_is_bit_identical_to_running) { return model_rows(); }
ParameterizedTest(int *row, interp, stepping_is_bit_identical_to_running) { step_equals_run(models[*row]); }

/* An image stream has no KV cache: it is recomputed whenever its image
 * changes. Image A, then B, then A again gives A's results bit for bit
 * (nothing of B is left behind), and B's differ from A's. */
static void image_a_b_a(const char *dir, const char *gguf)
{
    char a[300], b[300];
    snprintf(a, sizeof a, "image %s/image.png; finish", dir);
    snprintf(b, sizeof b, "image fixtures/image/grey-45x37.png; finish");
    as_session *once = open_session(gguf, 64), *aba = open_session(gguf, 64);
    run_ok(once, a);
    run_ok(aba, a);
    run_ok(aba, b);
    int n = aba->model->cfg.n_vocab;
    cr_assert_neq(memcmp(as_interp_logits(once->it), as_interp_logits(aba->it), (size_t)n * sizeof(float)), 0,
                  "image B gives other logits than image A");
    run_ok(aba, a);
    assert_same_capture(once, aba, 0);
    close_session(once);
    close_session(aba);
}

/* Prompt of the first k tokens, then the rest one pass per token (the KV
 * cache path), against one pass over everything. */
static void kv_cache_equals_recompute(const char *dir)
{
    char gguf[256], cmd[64];
    npy tok;
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s/image.png", dir);
    if (access(cmd, R_OK) == 0) {
        image_a_b_a(dir, gguf);
        return;
    }
    snprintf(cmd, sizeof cmd, "%s/tokens.npy", dir);
    cr_assert_eq(npy_read(cmd, &tok), 0);
    as_session *full = open_session(gguf, 64), *inc = open_session(gguf, 64);
    load_prompt(full, dir);
    run_ok(full, "finish");
    int k = 5;
    as_error err;
    load_source(inc, dir); /* an encoder-decoder's encoder runs once, in the first pass */
    cr_assert_eq(as_interp_set_tokens(inc->it, tok.i, k, &err), AS_OK);
    run_ok(inc, "finish");
    for (size_t i = (size_t)k; i < tok.count; i++) {
        cr_assert_eq(as_interp_append(inc->it, tok.i[i], &err), AS_OK);
        run_ok(inc, "finish");
    }
    /* An encoder recomputes every position at each token; its pair's types
     * are set once all are in. */
    snprintf(cmd, sizeof cmd, "%s/types.npy", dir);
    npy types;
    if (access(cmd, R_OK) == 0 && npy_read(cmd, &types) == 0) {
        cr_assert_eq(as_interp_set_types(inc->it, 0, types.i, (int)types.count, &err), AS_OK, "%s", err.msg);
        run_ok(inc, "finish");
        npy_free(&types);
    }
    assert_same_capture(full, inc, 1e-5);
    npy_free(&tok);
    close_session(full);
    close_session(inc);
}

ParameterizedTestParameters(interp, kv_cache_equals_recompute) { return model_rows(); }
ParameterizedTest(int *row, interp, kv_cache_equals_recompute) { kv_cache_equals_recompute(models[*row]); }

static void back_restores(const char *dir, size_t capture_mb)
{
    char gguf[256];
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    as_session *a = open_session(gguf, 64), *b = open_session(gguf, capture_mb);
    load_prompt(a, dir);
    load_prompt(b, dir);
    run_ok(a, "step 30; finish; gen 3; gen 1");
    /* b wanders: forward, back across ops, forward again, back across two
     * passes (to the middle of the second generated token's pass), forward. */
    run_ok(b, "step 30; back 7; step 3; back 20; finish; gen 3; back 1; back 60; finish; gen 1");
    const float *la = as_interp_logits(a->it), *lb = as_interp_logits(b->it);
    cr_assert(la && lb);
    cr_assert_eq(a->it->out->n_tokens, b->it->out->n_tokens);
    cr_assert_eq(memcmp(a->it->out->tokens, b->it->out->tokens, (size_t)a->it->out->n_tokens * 4), 0);
    if (capture_mb)
        assert_same_capture(a, b, 0);
    else
        cr_assert_eq(memcmp(la, lb, (size_t)a->model->cfg.n_vocab * sizeof *la), 0);
    close_session(a);
    close_session(b);
}

Test(interp, back_restores_state_exactly) { back_restores(models[0], 64); }
Test(interp, back_replays_when_hooks_are_not_captured) { back_restores(models[1], 0); }

static void threads_agree(const char *dir)
{
    char gguf[256];
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    as_session *a = open_session(gguf, 64), *b = open_session(gguf, 64);
    load_prompt(a, dir);
    load_prompt(b, dir);
    as_set_threads(1);
    run_ok(a, "finish");
    as_set_threads(2);
    run_ok(b, "finish");
    assert_same_capture(a, b, 1e-5);
    close_session(a);
    close_session(b);
}

ParameterizedTestParameters(interp, one_and_two_threads_agree) { return model_rows(); }
ParameterizedTest(int *row, interp, one_and_two_threads_agree) { threads_agree(models[*row]); }

Test(interp, capture_off_gives_the_same_logits)
{
    as_session *a = open_session("fixtures/tiny-gpt2.gguf", 64), *b = open_session("fixtures/tiny-gpt2.gguf", 0);
    load_prompt(a, models[0]);
    load_prompt(b, models[0]);
    run_ok(a, "finish; gen 4");
    run_ok(b, "finish; gen 4");
    cr_assert_eq(memcmp(a->it->out->tokens, b->it->out->tokens, (size_t)a->it->out->n_tokens * 4), 0);
    cr_assert_eq(memcmp(as_interp_logits(a->it), as_interp_logits(b->it), (size_t)a->model->cfg.n_vocab * 4), 0);
    char msg[1024];
    cr_assert_neq(run_cmd(b, "stats blocks.0.hook_resid_post", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "not captured"), "%s", msg);
    /* Patterns are the last thing dropped; with budget 0 they go too, and the
     * KV cache stays. */
    cr_assert(as_capture_has(b->cap, as_program_find_hook(b->prog, "blocks.1.attn.hook_k")));
    close_session(a);
    close_session(b);
}

static size_t widest_scratch(const as_interp *it)
{
    size_t w = 0;
    for (int k = 0; k < AS_HK_COUNT; k++)
        w = it->scratch_cap[0][k] > w ? it->scratch_cap[0][k] : w;
    return w;
}

/* With nothing captured, a long prompt runs AS_PROMPT_CHUNK positions a
 * pass (the working buffers then scale with the chunk): the same bits as
 * feeding the same chunks by hand (the KV-cached continuation), and
 * within 1e-5 of the largest logit of one captured pass over the whole
 * prompt (float32 sums of another shape). Stepping keeps one pass.
 * austen-llama: a context of 256, the prompt 200 tokens. */
Test(interp, a_long_prompt_without_capture_runs_in_chunks)
{
    enum { N = 200 };
    int32_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = i == 0 ? 1 : 3 + (i * 37) % 2000;
    const char *m = "../models/austen-llama.gguf";
    as_session *one = open_session(m, 64), *chunked = open_session(m, 0), *by_hand = open_session(m, 0);
    as_error err;
    cr_assert_eq(as_interp_set_tokens(one->it, ids, N, &err), AS_OK);
    run_ok(one, "finish");
    cr_assert_eq(one->it->n_passes, 1, "captured: one pass");
    cr_assert_eq(as_interp_set_tokens(chunked->it, ids, N, &err), AS_OK);
    run_ok(chunked, "finish");
    cr_assert_eq(chunked->it->n_passes, (N + AS_PROMPT_CHUNK - 1) / AS_PROMPT_CHUNK);
    cr_assert_eq(chunked->it->out->n_done, N);
    /* the widest span buffer: a chunk's logits (64 x 2048), not the prompt's */
    size_t widest = (size_t)AS_PROMPT_CHUNK * (size_t)chunked->model->cfg.n_vocab;
    cr_assert_leq(widest_scratch(chunked->it), widest, "a buffer of %zu floats", widest_scratch(chunked->it));
    for (int p0 = 0; p0 < N; p0 += AS_PROMPT_CHUNK) {
        int n = N - p0 < AS_PROMPT_CHUNK ? N - p0 : AS_PROMPT_CHUNK;
        cr_assert_eq(as_interp_set_tokens(by_hand->it, ids, p0 + n, &err), AS_OK);
        run_ok(by_hand, "finish");
    }
    int v = one->model->cfg.n_vocab;
    const float *lo = as_interp_logits(one->it), *lc = as_interp_logits(chunked->it),
                *lh = as_interp_logits(by_hand->it);
    cr_assert(lo && lc && lh);
    cr_assert_eq(memcmp(lc, lh, (size_t)v * sizeof *lc), 0, "chunked != the same chunks fed by hand");
    float big = 0, worst = 0;
    for (int i = 0; i < v; i++) {
        big = fmaxf(big, fabsf(lo[i]));
        worst = fmaxf(worst, fabsf(lo[i] - lc[i]));
    }
    cr_assert_leq(worst, 1e-5f * big, "chunked vs one pass: %g (largest logit %g)", worst, big);
    /* generating on from the chunked prompt: one position a pass, as always */
    run_ok(chunked, "gen 3");
    cr_assert_eq(chunked->it->out->n_done, N + 3);
    /* stepping a fresh prompt with nothing captured keeps one pass */
    as_session *stepped = open_session(m, 0);
    cr_assert_eq(as_interp_set_tokens(stepped->it, ids, N, &err), AS_OK);
    run_ok(stepped, "step 5; finish");
    cr_assert_eq(stepped->it->n_passes, 1);
    cr_assert_geq(widest_scratch(stepped->it), (size_t)N * (size_t)v, "one pass holds every position's logits");
    const float *ls = as_interp_logits(stepped->it);
    float off = 0;
    for (int i = 0; i < v; i++)
        off = fmaxf(off, fabsf(ls[i] - lo[i]));
    cr_assert_leq(off, 1e-5f * big, "stepped without capture vs captured: %g", off);
    close_session(one);
    close_session(chunked);
    close_session(by_hand);
    close_session(stepped);
}

/* With the patterns stored (`set patterns stored`): what the budget drops,
 * in which order. Under auto (the default) the same budget computes the
 * patterns on demand instead, and keeps every class: checked at the end. */
Test(interp, budget_drops_residual_copies_before_patterns)
{
    cr_assert(as_set_patterns("stored"));
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    enum { N = 20 };
    size_t by_class[AS_CLASS_RESID + 1] = {0};
    for (int h = 0; h < s->prog->n_hooks; h++)
        by_class[s->prog->hooks[h].klass] += as_capture_hook_bytes(s->prog, h, N);
    /* Room for patterns and scores at N positions, not quite for the logits. */
    size_t budget = by_class[AS_CLASS_PATTERN] + by_class[AS_CLASS_SCORES] + by_class[AS_CLASS_LOGITS] - 1;
    as_capture *c;
    as_interp *it;
    as_error err;
    cr_assert_eq(as_capture_new(&c, s->prog, budget, &err), AS_OK);
    for (int h = 0; h < s->prog->n_hooks; h++)
        cr_assert(as_capture_has(c, h), "nothing is dropped before a position is in use: %s", c->dropped);
    int32_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = 5 + i;
    as_stop stop;
    cr_assert_eq(as_interp_new(&it, s->prog, c, &err), AS_OK);
    cr_assert_eq(as_interp_set_tokens(it, ids, N, &err), AS_OK);
    cr_assert_eq(as_interp_run(it, AS_RUN_FINISH, 0, &stop, &err), AS_OK, "%s", err.msg);
    for (int h = 0; h < s->prog->n_hooks; h++) {
        const as_hook *hk = &s->prog->hooks[h];
        bool kept = hk->klass <= AS_CLASS_SCORES;
        cr_assert_eq(as_capture_has(c, h), kept, "%s (class %d) kept=%d", hk->name, hk->klass, !kept);
    }
    cr_assert(strstr(c->dropped, "residual-stream copies") && strstr(c->dropped, "logits"), "%s", c->dropped);
    cr_assert(!strstr(c->dropped, "patterns"), "%s", c->dropped);
    /* the message names a budget that keeps everything at these positions, and it does */
    const char *fig = strstr(c->dropped, "--capture-mb ");
    cr_assert(fig && strstr(c->dropped, "20 positions"), "%s", c->dropped);
    size_t mb = strtoul(fig + 13, NULL, 10);
    as_interp_free(it);
    as_capture_free(c);
    cr_assert_eq(as_capture_new(&c, s->prog, mb << 20, &err), AS_OK);
    cr_assert_eq(as_interp_new(&it, s->prog, c, &err), AS_OK);
    cr_assert_eq(as_interp_set_tokens(it, ids, N, &err), AS_OK);
    cr_assert_eq(as_interp_run(it, AS_RUN_FINISH, 0, &stop, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(c->n_dropped, 0, "--capture-mb %zu: %s", mb, c->dropped);
    as_interp_free(it);
    as_capture_free(c);
    /* auto: the budget that dropped the logits and everything after them
     * keeps them and q/k/v/z with the patterns and scores computed on
     * demand (the q rows then kept beside the KV cache), dropping only the
     * MLP activations and residual copies (the sum of the classes it keeps
     * is the budget less the stored patterns' and scores' bytes) */
    cr_assert(as_set_patterns("auto"));
    cr_assert_eq(as_capture_new(&c, s->prog, budget, &err), AS_OK);
    cr_assert_eq(as_interp_new(&it, s->prog, c, &err), AS_OK);
    cr_assert_eq(as_interp_set_tokens(it, ids, N, &err), AS_OK);
    cr_assert_eq(as_interp_run(it, AS_RUN_FINISH, 0, &stop, &err), AS_OK, "%s", err.msg);
    cr_assert(as_capture_patterns_on_demand(c));
    cr_assert_eq(c->dropped_from, AS_CLASS_MLP, "auto at the same budget: %s", c->dropped);
    for (int h = 0; h < s->prog->n_hooks; h++)
        cr_assert_eq(as_capture_has(c, h), s->prog->hooks[h].klass <= AS_CLASS_HEADS, "%s",
                     s->prog->hooks[h].name);
    cr_assert(!as_capture_stored(c, s->prog->attn[0].pattern) && as_capture_stored(c, s->prog->attn[0].q));
    as_interp_free(it);
    as_capture_free(c);
    close_session(s);
}

Test(interp, prompt_longer_than_context_is_refused)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    char cmd[512] = "prompt-ids", msg[1024];
    for (int i = 0; i < 40; i++)
        strcat(cmd, " 5");
    cr_assert_neq(run_cmd(s, cmd, msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "40 tokens") && strstr(msg, "32"), "message should give count and limit: %s", msg);
    /* The session goes on. */
    run_ok(s, "prompt-ids 1 2 3; finish; top 3");
    close_session(s);
}

Test(interp, generation_stops_at_the_context_end)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    run_ok(s, "prompt-ids 1 2 3; gen 100");
    cr_assert_eq(s->it->out->n_tokens, s->it->n_ctx);
    close_session(s);
}

Test(interp, breakpoints_with_wildcards_stop_after_the_hook)
{
    as_session *s = open_session("fixtures/tiny-llama.gguf", 64);
    run_ok(s, "prompt-ids 1 5 6 7; break blocks.*.attn.hook_pattern; continue");
    const as_op *cur = as_interp_current(s->it);
    cr_assert(cur);
    const as_op *prev = cur - 1;
    cr_assert_str_eq(s->prog->hooks[prev->out].name, "blocks.0.attn.hook_pattern");
    run_ok(s, "continue");
    prev = as_interp_current(s->it) - 1;
    cr_assert_str_eq(s->prog->hooks[prev->out].name, "blocks.1.attn.hook_pattern");
    run_ok(s, "continue");
    cr_assert(!s->it->in_pass, "the third continue runs to the pass end");
    run_ok(s, "unbreak blocks.*; prompt-ids 1 5; continue");
    cr_assert(!s->it->in_pass);
    close_session(s);
}

Test(interp, next_runs_to_the_end_of_the_block)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    run_ok(s, "prompt-ids 1 5 6; step 4; next");
    const as_op *cur = as_interp_current(s->it);
    cr_assert_eq(cur->layer, 1);
    cr_assert_eq((cur - 1)->layer, 0);
    cr_assert_str_eq(s->prog->hooks[(cur - 1)->out].name, "blocks.0.hook_resid_post");
    close_session(s);
}

/* A copy of tiny-gpt2 with a NaN planted in one weight: it loads with a
 * warning naming the tensor, and the pass reports the first hook where a
 * non-finite value appears. */
Test(interp, nan_weights_are_named_and_the_first_bad_hook_reported)
{
    as_gguf *g;
    as_error err;
    cr_assert_eq(as_gguf_open(&g, "fixtures/tiny-gpt2.gguf", &err), AS_OK);
    const as_gguf_tensor *t = as_gguf_tensor_find(g, "blk.1.attn_qkv.weight");
    cr_assert_eq(t->type, AS_GGML_F32);
    size_t off = (size_t)(t->data - g->map) + 4 * (32 * 40 + 3); /* row 40: a K row of layer 1 */
    unsigned char *copy = malloc(g->size);
    memcpy(copy, g->map, g->size);
    float nan = NAN;
    memcpy(copy + off, &nan, 4);
    char path[] = "/tmp/attnscope-nan-XXXXXX.gguf";
    int fd = mkstemps(path, 5);
    cr_assert(write(fd, copy, g->size) == (ssize_t)g->size);
    close(fd);
    free(copy);
    as_gguf_close(g);

    as_session *s = open_session(path, 64);
    unlink(path);
    cr_assert(strstr(s->model->warnings, "blk.1.attn_qkv.weight (1)"), "%s", s->model->warnings);
    run_ok(s, "prompt-ids 1 2 3; finish");
    const as_nonfinite *nf = &s->it->nonfinite;
    cr_assert(nf->found);
    cr_assert_str_eq(s->prog->hooks[nf->hook].name, "blocks.1.attn.hook_k");
    cr_assert_eq(nf->index, 8, "row 40 of W_QKV is k's output 8: index %d", nf->index);
    cr_assert_eq(nf->pos, 0);
    close_session(s);
}

/* The encoder-decoder's streams: the encoder runs in the first pass only;
 * each generated token's pass covers one decoder position and no encoder
 * position, and reads the cross-attention keys and values kept from it. */
Test(interp, an_encoder_decoder_runs_its_encoder_once_per_source)
{
    as_session *s = open_session("fixtures/tiny-transformer.gguf", 64);
    load_prompt(s, "fixtures/tiny-transformer");
    run_ok(s, "finish; gen 3");
    int enc = s->prog->source_stream, dec = s->prog->out_stream;
    cr_assert(enc >= 0 && enc != dec);
    int n_enc = s->it->st[enc].n_tokens;
    cr_assert_eq(s->it->n_passes, 4);
    cr_assert_eq(s->it->passes[0].n[enc], n_enc);
    for (int i = 1; i < 4; i++) {
        cr_assert_eq(s->it->passes[i].n[enc], 0, "pass %d recomputed the encoder", i);
        cr_assert_eq(s->it->passes[i].n[dec], 1);
    }
    int k = as_program_find_hook(s->prog, "decoder.1.cross_attn.hook_k");
    int pat = as_program_find_hook(s->prog, "decoder.1.cross_attn.hook_pattern");
    cr_assert_eq(s->prog->hooks[k].stream, enc, "cross-attention keys belong to the encoder stream");
    cr_assert_eq(s->cap->filled[k], n_enc);
    size_t shape[3];
    cr_assert_eq(as_capture_shape(s->cap, pat, s->cap->filled[pat], shape), 3);
    cr_assert(shape[1] == (size_t)s->it->out->n_tokens && shape[2] == (size_t)n_enc,
              "cross pattern [%zu, %zu, %zu]", shape[0], shape[1], shape[2]);
    /* A new source starts both streams over; the decoder's prefix stays. */
    int n_dec = s->it->out->n_tokens;
    run_ok(s, "source-ids 1 275 286; finish");
    cr_assert_eq(s->it->n_passes, 1);
    cr_assert_eq(s->it->passes[0].n[enc], 3);
    cr_assert_eq(s->it->passes[0].n[dec], n_dec);
    cr_assert_eq(s->cap->filled[k], 3);
    close_session(s);
}

Test(interp, back_restores_an_encoder_decoder_exactly) { back_restores("fixtures/tiny-transformer", 64); }
Test(interp, back_replays_an_encoder_decoder_when_hooks_are_not_captured)
{
    back_restores("fixtures/tiny-transformer", 0);
}

/* One clear message each, and the session goes on. */
Test(interp, encoder_decoder_input_errors_are_named)
{
    as_session *s = open_session("fixtures/tiny-transformer.gguf", 64);
    char msg[1024], cmd[512] = "source-ids";
    cr_assert_neq(run_cmd(s, "gen 3", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "no source yet") && strstr(msg, "source TEXT"), "%s", msg);
    run_ok(s, "prompt-ids 2 5");
    cr_assert_neq(run_cmd(s, "finish", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "no source yet"), "%s", msg);
    for (int i = 0; i < 33; i++)
        strcat(cmd, " 5");
    cr_assert_neq(run_cmd(s, cmd, msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "encoder input has 33 tokens") && strstr(msg, "encoder context holds 32"), "%s", msg);
    run_ok(s, "source-ids 1 5 6; finish; top 3; gen 2");
    close_session(s);
    s = open_session("fixtures/tiny-gpt2.gguf", 64);
    cr_assert_neq(run_cmd(s, "source-ids 1 2", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "has no source") && strstr(msg, "prompt"), "%s", msg);
    run_ok(s, "prompt-ids 1 2; finish");
    close_session(s);
}

/* Without a prompt the decoder starts from the file's decoder start token
 * (transformer.decoder_start_token_id: </s> here, not the BOS). */
Test(interp, the_decoder_starts_from_the_files_start_token)
{
    as_session *s = open_session("fixtures/tiny-transformer.gguf", 64);
    run_ok(s, "source-ids 1 275 286");
    cr_assert_eq(s->it->out->n_tokens, 1);
    cr_assert_eq(s->it->out->tokens[0], 2);
    cr_assert_eq(s->prog->start_token, 2);
    close_session(s);
}

/* Storage grows as positions are reached (64 first, then doubling): a
 * context stepped one token at a time across the growth, so that what was
 * stored is moved, holds bit for bit what the same steps store into
 * storage that was already large enough (grown by an earlier run, then
 * reset: capacity never shrinks), in every hook, norm statistic and the
 * KV cache the later steps read back. */
Test(interp, capture_growth_moves_what_was_stored)
{
    const char *m = "../models/austen-llama.gguf";
    as_session *a = open_session(m, 64), *b = open_session(m, 64);
    cr_assert_eq(a->cap->capacity[a->prog->out_stream], 64, "the first capacity");
    run_ok(a, "set temp 0; prompt-ids 1 300 301; gen 97");
    cr_assert_eq(a->it->out->n_tokens, 100);
    cr_assert_geq(a->cap->capacity[a->prog->out_stream], 100, "grew past 64");
    char cmd[2048] = "prompt-ids";
    for (int i = 0; i < 100; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), " %d", a->it->out->tokens[i]);
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "; finish");
    run_ok(b, cmd);
    int cap_b = b->cap->capacity[b->prog->out_stream];
    run_ok(b, "set temp 0; prompt-ids 1 300 301; gen 97");
    cr_assert_eq(b->cap->capacity[b->prog->out_stream], cap_b, "no growth in the second run");
    cr_assert_eq(memcmp(a->it->out->tokens, b->it->out->tokens, 100 * sizeof(int32_t)), 0, "same tokens");
    int compared = 0;
    for (int h = 0; h < a->prog->n_hooks; h++) {
        cr_assert_eq(as_capture_has(a->cap, h), as_capture_has(b->cap, h));
        if (!as_capture_has(a->cap, h))
            continue;
        cr_assert_eq(a->cap->filled[h], 100, "%s", a->prog->hooks[h].name);
        size_t n = as_capture_count(a->cap, h, 100);
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        as_capture_copy(a->cap, h, 100, x);
        as_capture_copy(b->cap, h, 100, y);
        cr_assert_eq(memcmp(x, y, n * sizeof *x), 0, "%s moved in growth differs", a->prog->hooks[h].name);
        free(x);
        free(y);
        for (int p = 0; p < 100; p++) {
            const as_norm_stat *s1 = as_capture_norm(a->cap, h, p), *s2 = as_capture_norm(b->cap, h, p);
            cr_assert((s1 == NULL) == (s2 == NULL));
            cr_assert(!s1 || !memcmp(s1, s2, sizeof *s1), "%s statistics at %d", a->prog->hooks[h].name, p);
        }
        compared++;
    }
    cr_assert_gt(compared, 20);
    close_session(a);
    close_session(b);
}

/* The same across a growth that moves unmasked rows: de-en's decoder
 * stepped one token at a time past 64 positions, its cross-attention rows
 * (queries of the decoder, keys of the encoder) moved as the decoder's
 * capacity doubles. de-en's window is 64, so the model is read from a copy
 * whose transformer.context_length says 131072 (its positions are
 * sinusoidal, computed: nothing else changes). */
static char *de_en_long(void)
{
    FILE *f = fopen("../models/de-en.gguf", "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    const char key[] = "transformer.context_length";
    char *k = memmem(b, (size_t)n, key, sizeof key - 1);
    cr_assert(k);
    uint32_t type, v = 131072;
    memcpy(&type, k + sizeof key - 1, 4);
    cr_assert_eq(type, 4u, "a uint32");
    memcpy(k + sizeof key - 1 + 4, &v, 4);
    static char path[64];
    snprintf(path, sizeof path, "/tmp/attnscope-de-en-long-%d.gguf", (int)getpid());
    f = fopen(path, "wb");
    cr_assert(f);
    fwrite(b, 1, (size_t)n, f);
    fclose(f);
    free(b);
    return path;
}

static void step_decoder(as_session *s, int n)
{
    as_error err;
    as_stop stop;
    int32_t bos = s->it->out->tokens[0];
    cr_assert_eq(as_interp_set_tokens(s->it, &bos, 1, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_interp_run(s->it, AS_RUN_FINISH, 0, &stop, &err), AS_OK, "%s", err.msg);
    for (int i = 1; i < n; i++) {
        cr_assert_eq(as_interp_append(s->it, 4 + (i * 37) % 500, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_interp_run(s->it, AS_RUN_FINISH, 0, &stop, &err), AS_OK, "%s", err.msg);
    }
}

Test(interp, capture_growth_moves_cross_attention_rows)
{
    char *m = de_en_long();
    as_session *a = open_session(m, 64), *b = open_session(m, 64);
    enum { N = 100 };
    run_ok(a, "source Ein Mann geht nach Hause.; prompt");
    run_ok(b, "source Ein Mann geht nach Hause.; prompt");
    step_decoder(a, N);
    cr_assert_geq(a->cap->capacity[a->prog->out_stream], N, "the decoder's storage grew");
    /* b: grown first by a run of N, then the same steps into storage large enough */
    step_decoder(b, N);
    int cap_b = b->cap->capacity[b->prog->out_stream];
    step_decoder(b, N);
    cr_assert_eq(b->cap->capacity[b->prog->out_stream], cap_b);
    int cross = 0;
    for (int h = 0; h < a->prog->n_hooks; h++) {
        if (!as_capture_has(a->cap, h) || a->prog->hooks[h].stream != a->prog->out_stream)
            continue;
        const as_hook *hk = &a->prog->hooks[h];
        cross += hk->is_attn && a->prog->attn[hk->attn].kv_stream != hk->stream;
        size_t n = as_capture_count(a->cap, h, N);
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        as_capture_copy(a->cap, h, N, x);
        as_capture_copy(b->cap, h, N, y);
        cr_assert_eq(memcmp(x, y, n * sizeof *x), 0, "%s moved in growth differs", hk->name);
        free(x);
        free(y);
    }
    cr_assert_gt(cross, 0, "cross-attention hooks compared");
    close_session(a);
    close_session(b);
    unlink(m);
}

/* A change of the interventions makes what was computed stale; a refresh
 * computes it again under the new rules up to the same op of the same
 * pass, bit for bit what a session that had the rules from the start
 * holds there; a read of the logits meanwhile is refused (NULL). */
static void refresh_equals_fresh(const char *dir, const char *rule)
{
    char gguf[256];
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    as_session *a = open_session(gguf, 64), *b = open_session(gguf, 64);
    load_prompt(a, dir);
    load_prompt(b, dir);
    as_error err;
    /* a: the rule first; b: computes without it, past a generated token, into the next pass */
    run_ok(a, rule);
    run_ok(a, "finish");
    run_ok(b, "finish");
    cr_assert_eq(as_interp_append(a->it, 7, &err), AS_OK);
    cr_assert_eq(as_interp_append(b->it, 7, &err), AS_OK);
    run_ok(a, "step 9");
    run_ok(b, "step 9");
    cr_assert(!as_interp_stale(b->it));
    run_ok(b, rule);
    cr_assert(as_interp_stale(b->it), "a new intervention makes the computed state stale");
    cr_assert_eq(as_session_refresh(b, &err), AS_OK, "%s", err.msg);
    cr_assert(!as_interp_stale(b->it));
    cr_assert_eq(a->it->pc, b->it->pc, "the refresh stands at the op it stood at (%d vs %d)", a->it->pc, b->it->pc);
    cr_assert_eq(a->it->out->n_done, b->it->out->n_done);
    assert_same_capture(a, b, 0);
    run_ok(a, "finish");
    run_ok(b, "finish");
    assert_same_capture(a, b, 0);
    /* removed: stale again; the logits are refused until computed again */
    run_ok(b, "unablate");
    cr_assert_null(as_interp_logits(b->it));
    run_ok(b, "finish"); /* the run itself recomputes from position 0 */
    cr_assert(!as_interp_stale(b->it));
    cr_assert_not_null(as_interp_logits(b->it));
    close_session(a);
    close_session(b);
}

Test(interp, a_changed_intervention_is_recomputed_to_the_same_op)
{
    refresh_equals_fresh("fixtures/tiny-gpt2", "ablate 1.1 zero");
}
Test(interp, a_changed_intervention_is_recomputed_in_an_encoder_decoder)
{
    refresh_equals_fresh("fixtures/tiny-transformer", "ablate mlp 0");
}
