/* The encoder's commands (src/cmd_fill.c) on the tiny-bert and
 * tiny-nomic-bert fixtures (made by models/recipes/make_fixtures.py from
 * an independent PyTorch forward pass): what they print and write against
 * the fixtures' hooks, the sentence pair's token types, the refusals, and
 * an edited prompt recomputing every position. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/capture.h"
#include "attnscope/gguf.h"
#include "helpers.h"

#define BERT "fixtures/tiny-bert"
#define NOMIC "fixtures/tiny-nomic-bert"

/* Runs a command with its output captured into a malloc'd string. */
static char *output_of(as_session *s, const char *cmd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len), *old = s->out;
    s->out = mem;
    char msg[1024];
    int rc = run_cmd(s, cmd, msg, sizeof msg);
    s->out = old;
    fclose(mem);
    cr_assert_eq(rc, AS_OK, "%s: %s", cmd, msg);
    return buf;
}

/* The fixture's ids and types as prompt-ids and token-types commands. */
static as_session *fixture_session(const char *dir, size_t capture_mb, bool with_types)
{
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s.gguf", dir);
    as_session *s = open_session(path, capture_mb);
    const char *files[2] = {"tokens", "types"}, *cmds[2] = {"prompt-ids", "token-types"};
    for (int f = 0; f < (with_types ? 2 : 1); f++) {
        npy a;
        snprintf(path, sizeof path, "%s/%s.npy", dir, files[f]);
        cr_assert_eq(npy_read(path, &a), 0, "cannot read %s", path);
        size_t o = (size_t)snprintf(cmd, sizeof cmd, "%s", cmds[f]);
        for (size_t i = 0; i < a.count; i++)
            o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", a.i[i]);
        run_ok(s, cmd);
        npy_free(&a);
    }
    return s;
}

static npy fixture(const char *dir, const char *hook)
{
    char path[256];
    npy a;
    snprintf(path, sizeof path, "%s/%s.npy", dir, hook);
    cr_assert_eq(npy_read(path, &a), 0, "cannot read %s", path);
    return a;
}

Test(encoder, embed_writes_the_pooled_vector_pytorch_computes)
{
    const char *dirs[] = {BERT, NOMIC};
    for (int m = 0; m < 2; m++) {
        as_session *s = fixture_session(dirs[m], 64, true);
        run_ok(s, "finish");
        char path[] = "/tmp/attnscope-embed-XXXXXX.npy";
        close(mkstemps(path, 4));
        char cmd[128];
        snprintf(cmd, sizeof cmd, "embed %s", path);
        run_ok(s, cmd);
        npy got, want = fixture(dirs[m], "pooler.hook_out");
        cr_assert_eq(npy_read(path, &got), 0);
        unlink(path);
        size_t d = want.shape[1];
        cr_assert_eq(got.ndim, 1);
        cr_assert_eq(got.count, d);
        /* every row of the fixture's hook is the pooled vector: compare the last */
        for (size_t i = 0; i < d; i++)
            cr_assert_leq(fabs(got.f[i] - want.f[(want.shape[0] - 1) * d + i]), 1e-4, "%s [%zu]: %g vs %g",
                          dirs[m], i, got.f[i], want.f[(want.shape[0] - 1) * d + i]);
        npy_free(&got);
        npy_free(&want);
        close_session(s);
    }
}

/* fill K POS prints the K most probable tokens of the fixture's logits at
 * POS, with their softmax probabilities. */
Test(encoder, fill_at_a_position_gives_the_heads_top_tokens)
{
    as_session *s = fixture_session(BERT, 64, true);
    run_ok(s, "finish");
    npy lg = fixture(BERT, "unembed.hook_out");
    size_t V = lg.shape[1];
    for (int pos = 0; pos < 16; pos += 5) {
        const float *row = lg.f + (size_t)pos * V;
        double mx = -INFINITY, sum = 0;
        size_t best = 0;
        for (size_t j = 0; j < V; j++)
            if (row[j] > mx)
                mx = row[j], best = j;
        for (size_t j = 0; j < V; j++)
            sum += exp(row[j] - mx);
        char cmd[64];
        snprintf(cmd, sizeof cmd, "fill 3 %d", pos);
        char *out = output_of(s, cmd);
        int rank, id;
        double p;
        const char *line = strstr(out, "\n1\t");
        cr_assert(line, "%s", out);
        cr_assert_eq(sscanf(line + 1, "%d\t%d\t%*s\t%lf", &rank, &id, &p), 3, "%s", out);
        cr_assert_eq((size_t)id, best, "position %d: top id %d, PyTorch's %zu", pos, id, best);
        cr_assert_leq(fabs(p - 1 / sum), 1e-5, "position %d: p %g vs %g", pos, p, 1 / sum);
        free(out);
    }
    npy_free(&lg);
    close_session(s);
}

Test(encoder, fill_finds_each_mask_typed_in_the_prompt)
{
    as_session *s = open_session(BERT ".gguf", 64);
    run_ok(s, "prompt \"the [MASK] sat on [MASK] mat\"; finish");
    char *out = output_of(s, "fill 2");
    int32_t mask = as_tokenizer_find(s->model->tok, "[MASK]");
    int masks = 0, shown = 0;
    for (int i = 0; i < s->it->out->n_tokens; i++)
        masks += s->it->out->tokens[i] == mask;
    for (const char *p = out; (p = strstr(p, "predictions at position")); p++)
        shown++;
    cr_assert_eq(masks, 2);
    cr_assert_eq(shown, 2, "%s", out);
    cr_assert(strstr(out, "([MASK])"), "%s", out);
    free(out);
    char msg[1024];
    run_ok(s, "prompt \"the cat sat\"; finish");
    cr_assert_neq(run_cmd(s, "fill", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "no [MASK]") && strstr(msg, "POS"), "%s", msg);
    close_session(s);
}

/* similarity's cosine is the cosine of the two texts' embed vectors. */
Test(encoder, similarity_is_the_cosine_of_the_pooled_vectors)
{
    const char *a = "the cat sat on a mat", *b = "hi the cat";
    float *v[2];
    for (int t = 0; t < 2; t++) {
        as_session *s = open_session(BERT ".gguf", 64);
        char cmd[256], path[] = "/tmp/attnscope-sim-XXXXXX.npy";
        close(mkstemps(path, 4));
        snprintf(cmd, sizeof cmd, "prompt \"%s\"; finish; embed %s", t ? b : a, path);
        run_ok(s, cmd);
        npy e;
        cr_assert_eq(npy_read(path, &e), 0);
        unlink(path);
        v[t] = e.f;
        close_session(s);
    }
    double dot = 0, aa = 0, bb = 0;
    for (int i = 0; i < 32; i++)
        dot += (double)v[0][i] * v[1][i], aa += (double)v[0][i] * v[0][i], bb += (double)v[1][i] * v[1][i];
    double want = dot / sqrt(aa * bb), got;
    as_session *s = open_session(BERT ".gguf", 64);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "similarity \"%s\" \"%s\"", a, b);
    char *out = output_of(s, cmd);
    cr_assert_eq(sscanf(out, "cosine similarity %lf", &got), 1, "%s", out);
    cr_assert_leq(fabs(got - want), 1e-5, "%g vs %g", got, want);
    cr_assert(want < 0.999, "two different texts should not give the same vector (%g)", want);
    free(out);
    free(v[0]);
    free(v[1]);
    close_session(s);
}

Test(encoder, a_sentence_pair_has_sep_and_token_types)
{
    as_session *s = open_session(BERT ".gguf", 64);
    run_ok(s, "prompt \"the cat\" \"sat on a mat\"");
    const as_stream_state *st = s->it->out;
    int32_t sep = as_tokenizer_find(s->model->tok, "[SEP]");
    /* [CLS] the cat [SEP] | sat on a mat [SEP] */
    int32_t cls = as_tokenizer_find(s->model->tok, "[CLS]");
    cr_assert_eq(st->n_tokens, 9);
    cr_assert_eq(st->tokens[0], cls);
    cr_assert_eq(st->tokens[3], sep);
    cr_assert_eq(st->tokens[8], sep);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(st->types[i], i < 4 ? 0 : 1, "position %d: type %d", i, st->types[i]);
    /* the types reach the embedding: position 4's type embedding is row 1 */
    run_ok(s, "finish");
    npy w = fixture(BERT, "embed.hook_token_type_embed"); /* types 0 x 9 then 1 x 7 */
    int h = as_program_find_hook(s->prog, "embed.hook_token_type_embed");
    for (int i = 0; i < 32; i++) {
        cr_assert_eq(as_capture_row(s->cap, h, 0)[i], w.f[i]);
        cr_assert_eq(as_capture_row(s->cap, h, 4)[i], w.f[9 * 32 + i]);
    }
    npy_free(&w);
    close_session(s);
}

Test(encoder, refusals_name_what_and_why)
{
    as_session *s = fixture_session(BERT, 64, false);
    char msg[1024];
    cr_assert_neq(run_cmd(s, "gen 3", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "encoder") && strstr(msg, "no next token"), "%s", msg);
    run_ok(s, "finish");
    cr_assert_neq(run_cmd(s, "dla 5", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "Post-LN"), "%s", msg);
    cr_assert_neq(run_cmd(s, "token-types 0 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "type 2 at position 1") && strstr(msg, "0..1"), "%s", msg);
    cr_assert_neq(run_cmd(s, "token-types 0 1", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "2 given, 16 tokens"), "%s", msg);
    /* the session goes on */
    run_ok(s, "finish; fill 2 3");
    close_session(s);

    s = open_session(NOMIC ".gguf", 64);
    run_ok(s, "prompt-ids 1 2 3; finish; embed");
    cr_assert_neq(run_cmd(s, "fill 3 1", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "no masked-LM head"), "%s", msg);
    close_session(s);

    s = open_session("fixtures/tiny-gpt2.gguf", 64);
    run_ok(s, "prompt-ids 1 2 3");
    cr_assert_neq(run_cmd(s, "token-types 0 1 1", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "no token-type embedding"), "%s", msg);
    cr_assert_neq(run_cmd(s, "prompt \"a\" \"b\"", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "token types"), "%s", msg);
    cr_assert_neq(run_cmd(s, "embed", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "pools nothing"), "%s", msg);
    close_session(s);
}

/* Every position sees every other: changing the last token changes the
 * first position's state, and the result equals a fresh run. */
Test(encoder, editing_the_prompt_recomputes_every_position)
{
    as_session *a = open_session(BERT ".gguf", 64), *b = open_session(BERT ".gguf", 64);
    run_ok(a, "prompt-ids 2 5 6 7 8; finish");
    int h = as_program_find_hook(a->prog, "blocks.1.ln2.hook_normalized");
    float before[32];
    memcpy(before, as_capture_row(a->cap, h, 0), sizeof before);
    run_ok(a, "prompt-ids 2 5 6 7 40; finish");
    run_ok(b, "prompt-ids 2 5 6 7 40; finish");
    cr_assert_neq(memcmp(before, as_capture_row(a->cap, h, 0), sizeof before), 0,
                  "position 0 must see the new last token");
    for (int k = 0; k < a->prog->n_hooks; k++) {
        size_t n = as_capture_count(a->cap, k, a->cap->filled[k]);
        cr_assert_eq(a->cap->filled[k], b->cap->filled[k], "%s", a->prog->hooks[k].name);
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        as_capture_copy(a->cap, k, a->cap->filled[k], x);
        as_capture_copy(b->cap, k, b->cap->filled[k], y);
        cr_assert_eq(memcmp(x, y, n * sizeof *x), 0, "%s differs from a fresh run", a->prog->hooks[k].name);
        free(x);
        free(y);
    }
    close_session(a);
    close_session(b);
}

/* heads on an encoder adds next-token (key q+1, which only an encoder's
 * queries see): its previous- and next-token scores equal the means of
 * PyTorch's patterns one below and one above the diagonal. */
Test(encoder, heads_scores_next_token_heads_from_the_patterns)
{
    as_session *s = fixture_session(BERT, 64, true);
    run_ok(s, "finish");
    char path[] = "/tmp/attnscope-heads-XXXXXX.npy", cmd[128];
    close(mkstemps(path, 4));
    snprintf(cmd, sizeof cmd, "heads context %s", path);
    run_ok(s, cmd);
    npy h;
    cr_assert_eq(npy_read(path, &h), 0);
    unlink(path);
    cr_assert_eq(h.shape[0], 5, "previous, first, duplicate, induction, next");
    size_t L = h.shape[1], H = h.shape[2], n = 16;
    for (size_t l = 0; l < L; l++) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%zu.attn.hook_pattern", l);
        npy p = fixture(BERT, name); /* [H, n, n] */
        for (size_t hd = 0; hd < H; hd++) {
            double next = 0, prev = 0;
            for (size_t q = 0; q + 1 < n; q++) {
                next += p.f[(hd * n + q) * n + q + 1];
                prev += p.f[(hd * n + q + 1) * n + q];
            }
            cr_assert_leq(fabs(h.f[(4 * L + l) * H + hd] - next / (n - 1)), 1e-5, "L%zu H%zu next", l, hd);
            cr_assert_leq(fabs(h.f[(0 * L + l) * H + hd] - prev / (n - 1)), 1e-5, "L%zu H%zu prev", l, hd);
        }
        npy_free(&p);
    }
    npy_free(&h);
    close_session(s);
}

/* ---- broken encoder files: refused with what and where ---- */

/* A copy of tiny-bert with one key set (u32 or bool) and the tensors
 * named `drop` left out; loads it and returns the error message. */
static void load_edited(const char *key, int64_t value, bool is_bool, const char *drop, char *msg, size_t cap)
{
    as_gguf *g;
    as_gguf_writer *w = edit_gguf(BERT ".gguf", NULL, drop, &g);
    if (key && is_bool)
        as_gguf_writer_set_bool(w, key, value != 0);
    else if (key)
        as_gguf_writer_set_u32(w, key, (uint32_t)value);
    load_refused(w, g, msg, cap);
}

Test(encoder, broken_files_are_refused_by_name)
{
    char msg[1024];
    load_edited("bert.attention.causal", 1, true, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "bert.attention.causal is true"), "%s", msg);
    load_edited("bert.pooling_type", 9, false, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "bert.pooling_type = 9") && strstr(msg, "(mean)"), "%s", msg);
    load_edited("tokenizer.ggml.token_type_count", 3, false, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "token_types.weight"), "%s", msg);
    load_edited("tokenizer.ggml.token_type_count", 0, false, NULL, msg, sizeof msg);
    cr_assert(strstr(msg, "token_type_count = 0"), "%s", msg);
    load_edited(NULL, 0, false, "mlm.norm.bias", msg, sizeof msg);
    cr_assert(strstr(msg, "mlm.norm.bias") && strstr(msg, "missing"), "%s", msg);
    load_edited(NULL, 0, false, "blk.1.layer_output_norm.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "blk.1.layer_output_norm.weight"), "%s", msg);
    load_edited(NULL, 0, false, "position_embd.weight", msg, sizeof msg);
    cr_assert(strstr(msg, "position_embd.weight"), "%s", msg);
}

/* The lens reads each layer's output (ln2) through the whole masked-LM
 * head: at the last layer it is the model's own logits. */
Test(encoder, the_lens_at_the_last_layer_is_the_heads_output)
{
    as_session *s = fixture_session(BERT, 64, true);
    run_ok(s, "finish");
    char path[] = "/tmp/attnscope-lens-XXXXXX.npy", cmd[128];
    close(mkstemps(path, 4));
    snprintf(cmd, sizeof cmd, "lens 6 %s", path);
    run_ok(s, cmd);
    npy lens, lg = fixture(BERT, "unembed.hook_out");
    cr_assert_eq(npy_read(path, &lens), 0);
    unlink(path);
    size_t V = lg.shape[1], L = lens.shape[0];
    cr_assert_eq(L, 3, "embeddings and 2 layers");
    double worst = 0, moved = 0;
    for (size_t j = 0; j < V; j++) {
        worst = fmax(worst, fabs(lens.f[(L - 1) * V + j] - lg.f[6 * V + j]));
        moved = fmax(moved, fabs(lens.f[0 * V + j] - lg.f[6 * V + j]));
    }
    cr_assert_leq(worst, 2e-4, "last layer's lens vs PyTorch's logits: %g", worst);
    cr_assert_geq(moved, 1e-2, "the embeddings' lens should differ from the output");
    npy_free(&lens);
    npy_free(&lg);
    close_session(s);
}
