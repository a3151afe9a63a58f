/* The shipped models (models/NAME.gguf) against the PyTorch logits their
 * training recipe wrote (tests/fixtures/models/NAME.logits.npy, made by
 * models/recipes/train.py from the same weights): max abs diff 1e-3, the
 * issue's bound; the text models' logits reach about ±20. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static void check_model(const char *name)
{
    char gguf[256], tok_path[256], logit_path[256], cmd[8192];
    snprintf(gguf, sizeof gguf, "../models/%s.gguf", name);
    snprintf(tok_path, sizeof tok_path, "fixtures/models/%s.tokens.npy", name);
    snprintf(logit_path, sizeof logit_path, "fixtures/models/%s.logits.npy", name);
    npy tok, ref;
    cr_assert_eq(access(gguf, R_OK), 0, "%s is missing", gguf);
    cr_assert_eq(npy_read(tok_path, &tok), 0, "%s is missing", tok_path);
    cr_assert_eq(npy_read(logit_path, &ref), 0, "%s is missing", logit_path);
    as_session *s = open_session(gguf, 256);
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "prompt-ids");
    for (size_t i = 0; i < tok.count; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", tok.i[i]);
    run_ok(s, cmd);
    run_ok(s, "finish");
    int V = s->model->cfg.n_vocab, lg = as_program_hook(s->prog, AS_HK_LOGITS, -1);
    cr_assert_eq(ref.ndim, 2);
    cr_assert_eq(ref.shape[0], tok.count);
    cr_assert_eq(ref.shape[1], (size_t)V);
    double worst = 0;
    for (size_t p = 0; p < tok.count; p++)
        for (int v = 0; v < V; v++)
            worst = fmax(worst, fabs(as_capture_row(s->cap, lg, (int)p)[v] - ref.f[p * (size_t)V + (size_t)v]));
    cr_assert_leq(worst, 1e-3, "%s: max abs logit difference %.3g", name, worst);
    npy_free(&tok);
    npy_free(&ref);
    close_session(s);
}

Test(models, austen_gpt2_matches_its_recipe) { check_model("austen-gpt2"); }

/* de-en, the encoder-decoder: its source (de-en.source.npy, <s> and a
 * German compound) through `source-ids`, the decoder's tokens (<s>, the
 * English, </s>) through `prompt-ids`; the logits at every decoder
 * position against models/recipes/train_deen.py's PyTorch pass
 * (nn.Transformer, float32) over the same weights: max abs diff 1e-3, as
 * the other shipped models (the logits reach about ±10; measured 6.2e-6). */
Test(models, de_en_matches_its_recipe)
{
    npy src, tok, ref;
    cr_assert_eq(npy_read("fixtures/models/de-en.source.npy", &src), 0, "de-en.source.npy is missing");
    cr_assert_eq(npy_read("fixtures/models/de-en.tokens.npy", &tok), 0, "de-en.tokens.npy is missing");
    cr_assert_eq(npy_read("fixtures/models/de-en.logits.npy", &ref), 0, "de-en.logits.npy is missing");
    as_session *s = open_session("../models/de-en.gguf", 64);
    char line[4096];
    size_t o = (size_t)snprintf(line, sizeof line, "source-ids");
    for (size_t i = 0; i < src.count; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, " %d", src.i[i]);
    run_ok(s, line);
    o = (size_t)snprintf(line, sizeof line, "prompt-ids");
    for (size_t i = 0; i < tok.count; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, " %d", tok.i[i]);
    run_ok(s, line);
    run_ok(s, "finish");
    int V = s->model->cfg.n_vocab, lg = as_program_hook(s->prog, AS_HK_LOGITS, -1);
    cr_assert_eq(ref.ndim, 2);
    cr_assert_eq(ref.shape[0], tok.count);
    cr_assert_eq(ref.shape[1], (size_t)V);
    double worst = 0, big = 0;
    for (size_t p = 0; p < tok.count; p++)
        for (int v = 0; v < V; v++) {
            worst = fmax(worst, fabs(as_capture_row(s->cap, lg, (int)p)[v] - ref.f[p * (size_t)V + (size_t)v]));
            big = fmax(big, fabs(ref.f[p * (size_t)V + (size_t)v]));
        }
    cr_assert_gt(big, 1.0, "the fixture's logits are not those of a trained model (max |logit| %g)", big);
    cr_assert_leq(worst, 1e-3, "de-en: max abs logit difference %.3g", worst);
    npy_free(&src);
    npy_free(&tok);
    npy_free(&ref);
    close_session(s);
}
/* de-en's greedy translations: for each source of de-en.greedy.tsv
 * ("German<TAB>ids", PyTorch's greedy decoding in train_deen.py, up to
 * </s>), attnscope's own tokenizer (`source TEXT`), the start token and
 * `gen 24` at temperature 0 give the same ids; a `gen` that stops at </s>
 * has computed that position as well. */
Test(models, de_en_translates_as_its_recipe)
{
    FILE *f = fopen("fixtures/models/de-en.greedy.tsv", "r");
    cr_assert_not_null(f, "de-en.greedy.tsv is missing");
    as_session *s = open_session("../models/de-en.gguf", 64);
    run_ok(s, "set temp 0");
    int eos = as_tokenizer_eos(s->model->tok), n_lines = 0;
    char line[1024], cmd[1100];
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        cr_assert_not_null(tab, "de-en.greedy.tsv: no tab in %s", line);
        *tab = '\0';
        int want[64], n_want = 0, off = 0, id;
        for (const char *p = tab + 1; n_want < 64 && sscanf(p, "%d%n", &id, &off) == 1; p += off)
            want[n_want++] = id;
        snprintf(cmd, sizeof cmd, "source %s", line);
        run_ok(s, cmd);
        run_ok(s, "prompt-ids 1");
        run_ok(s, "gen 24");
        const int32_t *got = s->it->out->tokens;
        int n_got = s->it->out->n_tokens - 1; /* after the start token */
        if (n_got > 0 && got[n_got] == eos) {
            n_got--;
            /* the end-of-sequence token is computed too (the view selects it) */
            cr_assert_eq(s->it->out->n_done, s->it->out->n_tokens, "%s: gen stopped at </s> with %d of %d positions computed",
                         line, s->it->out->n_done, s->it->out->n_tokens);
        }
        cr_assert_eq(n_got, n_want, "%s: attnscope generated %d tokens, PyTorch %d", line, n_got, n_want);
        for (int i = 0; i < n_want; i++)
            cr_assert_eq(got[1 + i], want[i], "%s: token %d is %d, PyTorch's %d", line, i, got[1 + i], want[i]);
        n_lines++;
    }
    fclose(f);
    cr_assert_geq(n_lines, 20, "de-en.greedy.tsv has %d sources", n_lines);
    close_session(s);
}

Test(models, austen_llama_matches_its_recipe) { check_model("austen-llama"); }
Test(models, induction_matches_its_recipe) { check_model("induction"); }


/* austen-bert: every hook of its short sentence pair is held to the
 * float64 reference in test_interp.c (fixtures/models/austen-bert/, made
 * by models/recipes/export_bert.py); here what a user runs on it. `embed`
 * writes the pooled vector (mean pooling of the last LayerNorm's output,
 * entries about ±3: max abs 1e-4), and `fill`'s first prediction at the
 * [MASK] is the reference logits' arg-max there. */
Test(models, austen_bert_embed_and_fill_match_its_recipe)
{
    const char *dir = "fixtures/models/austen-bert";
    char path[256], out[] = "/tmp/attnscope-test-pooled-XXXXXX.npy", cmd[512];
    npy tok, types, pooled, logits, got;
    snprintf(path, sizeof path, "%s/tokens.npy", dir);
    cr_assert_eq(npy_read(path, &tok), 0, "%s is missing", path);
    snprintf(path, sizeof path, "%s/types.npy", dir);
    cr_assert_eq(npy_read(path, &types), 0, "%s is missing", path);
    snprintf(path, sizeof path, "%s/pooler.hook_out.npy", dir);
    cr_assert_eq(npy_read(path, &pooled), 0, "%s is missing", path);
    snprintf(path, sizeof path, "%s/unembed.hook_out.npy", dir);
    cr_assert_eq(npy_read(path, &logits), 0, "%s is missing", path);
    as_session *s = open_session("../models/austen-bert.gguf", 64);
    snprintf(path, sizeof path, "%s/tokens.npy", dir);
    run_npy_ids(s, "prompt-ids", path, false);
    snprintf(path, sizeof path, "%s/types.npy", dir);
    run_npy_ids(s, "token-types", path, false);
    int fd = mkstemps(out, 4);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "finish; embed %s", out);
    run_ok(s, cmd);
    cr_assert_eq(npy_read(out, &got), 0, "embed wrote no %s", out);
    unlink(out);
    size_t d = (size_t)s->model->cfg.d_model, V = (size_t)s->model->cfg.n_vocab;
    cr_assert_eq(got.count, d);
    double worst = 0;
    for (size_t i = 0; i < d; i++)
        worst = fmax(worst, fabs(got.f[i] - pooled.f[i]));
    cr_assert_leq(worst, 1e-4, "austen-bert: max abs pooled difference %.3g", worst);

    /* the [MASK]: fill's first line names the reference's best token */
    int mask = -1;
    for (size_t i = 0; i < tok.count; i++)
        if (tok.i[i] == as_tokenizer_mask(s->model->tok))
            mask = (int)i;
    cr_assert_geq(mask, 0, "the fixture has a [MASK]");
    size_t best = 0;
    for (size_t v = 1; v < V; v++)
        if (logits.f[(size_t)mask * V + v] > logits.f[(size_t)mask * V + best])
            best = v;
    char *text = run_output(s, "fill 1");
    const char *line = strstr(text, "\n1\t");
    int id = -1;
    cr_assert(line && sscanf(line + 1, "1\t%d", &id) == 1, "fill 1 printed: %s", text);
    cr_assert_eq((size_t)id, best, "fill's best at the [MASK] is %d, the reference's %zu", id, best);
    free(text);
    npy_free(&tok);
    npy_free(&types);
    npy_free(&pooled);
    npy_free(&logits);
    npy_free(&got);
    close_session(s);
}

/* austen-moe: every hook of its fixture passage, the chosen experts
 * exactly, is held to the float64 reference in test_interp.c
 * (fixtures/models/austen-moe/, made by models/recipes/train_moe.py);
 * here what a user reads off it. `experts` on the same tokens prints,
 * for each routed layer, how often each expert was chosen: those counts
 * equal the reference's blocks.L.mlp.hook_expert_indices counted per
 * expert, each load is that count over the tokens, and the first token
 * an expert lists occurs there as often as the reference routed it the
 * most frequent (an exact count; ties only reorder equal counts). The
 * dense layer 0 has no table. */
Test(models, austen_moe_experts_count_the_reference_choices)
{
    const char *dir = "fixtures/models/austen-moe";
    char path[256];
    as_session *s = open_session("../models/austen-moe.gguf", 64);
    snprintf(path, sizeof path, "%s/tokens.npy", dir);
    run_npy_ids(s, "prompt-ids", path, false);
    run_ok(s, "finish");
    char *text = run_output(s, "experts");
    cr_assert_null(strstr(text, "layer 0:"), "the dense layer has a table: %s", text);
    int routed = 0;
    for (int L = 0; L < s->model->cfg.n_layer; L++) {
        npy ix, tok;
        snprintf(path, sizeof path, "%s/blocks.%d.mlp.hook_expert_indices.npy", dir, L);
        if (npy_read(path, &ix))
            continue;
        routed++;
        snprintf(path, sizeof path, "%s/tokens.npy", dir);
        cr_assert_eq(npy_read(path, &tok), 0);
        cr_assert_eq(ix.ndim, 2);
        size_t n = ix.shape[0], k = ix.shape[1];
        cr_assert_eq(n, tok.count);
        char head[32];
        snprintf(head, sizeof head, "layer %d:", L);
        const char *at = strstr(text, head);
        cr_assert(at, "no table for routed layer %d: %s", L, text);
        int E = 0;
        cr_assert_eq(sscanf(at, "layer %*d: %d experts", &E), 1);
        for (int e = 0; e < E; e++) {
            int count = 0, best = 0;
            for (size_t p = 0; p < n; p++)
                for (size_t j = 0; j < k; j++)
                    count += (int)ix.f[p * k + j] == e;
            /* the reference's most frequent token among this expert's */
            for (size_t p = 0; p < n; p++) {
                int c = 0;
                for (size_t q = 0; q < n; q++)
                    for (size_t j = 0; j < k; j++)
                        c += tok.i[q] == tok.i[p] && (int)ix.f[q * k + j] == e;
                best = c > best ? c : best;
            }
            char row[16];
            snprintf(row, sizeof row, "\n  %6d ", e);
            const char *r = strstr(at, row);
            cr_assert(r, "layer %d has no row for expert %d: %s", L, e, at);
            float load;
            int chosen, first;
            cr_assert_eq(sscanf(r + strlen(row), "%f%% %d", &load, &chosen), 2, "%.80s", r);
            cr_assert_eq(chosen, count, "layer %d expert %d chosen %d times, the reference %d", L, e, chosen,
                         count);
            cr_assert_float_eq(load, 100.0 * count / (double)n, 0.051, "layer %d expert %d load %.1f%%", L, e,
                               load);
            const char *x = strstr(r + 1, "\xc3\x97"), *eol = strchr(r + 1, '\n');
            if (count == 0) {
                cr_assert(!x || (eol && x > eol), "expert %d took nothing but lists a token", e);
                continue;
            }
            cr_assert(x && (!eol || x < eol), "layer %d expert %d lists no token: %.80s", L, e, r);
            cr_assert_eq(sscanf(x + 2, "%d", &first), 1);
            cr_assert_eq(first, best, "layer %d expert %d's first token %d times, the reference's most %d", L, e,
                         first, best);
        }
        npy_free(&ix);
        npy_free(&tok);
    }
    cr_assert_eq(routed, 3, "austen-moe routes layers 1-3; the fixture has %d", routed);
    free(text);
    close_session(s);
}

/* austen-moe's validation loss is compared with austen-llama's on the same
 * tokens (its card): so its file holds austen-llama's tokenizer exactly.
 * Every tokenizer.* key of either file is in the other with the same type
 * and value (the 2,048 pieces, their scores and types, the special ids),
 * read with attnscope's GGUF reader; and both tokenize the card's passage
 * to the same ids. */
Test(models, austen_moe_has_austen_llamas_tokenizer)
{
    as_gguf *g[2];
    const char *path[2] = {"../models/austen-moe.gguf", "../models/austen-llama.gguf"};
    for (int i = 0; i < 2; i++) {
        as_error err = {0};
        cr_assert_eq(as_gguf_open(&g[i], path[i], &err), AS_OK, "%s", err.msg);
    }
    int keys = 0;
    for (int i = 0; i < 2; i++)
        for (uint64_t k = 0; k < g[i]->n_kv; k++) {
            const as_gguf_kv *a = &g[i]->kvs[k];
            if (strncmp(a->key, "tokenizer.", 10))
                continue;
            keys++;
            const as_gguf_kv *b = as_gguf_find(g[1 - i], a->key);
            cr_assert(b, "%s has %s, %s has not", path[i], a->key, path[1 - i]);
            cr_assert_eq(a->type, b->type, "%s", a->key);
            if (a->type == AS_GGUF_STRING)
                cr_assert(a->str_len == b->str_len && !memcmp(a->str, b->str, a->str_len), "%s", a->key);
            else if (a->type != AS_GGUF_ARRAY)
                cr_assert(!memcmp(&a->v, &b->v, sizeof a->v), "%s", a->key);
            else {
                cr_assert(a->arr_type == b->arr_type && a->arr_len == b->arr_len, "%s", a->key);
                for (uint64_t j = 0; j < a->arr_len; j++)
                    if (a->arr_type == AS_GGUF_STRING)
                        cr_assert(a->str_lens[j] == b->str_lens[j] && !memcmp(a->strs[j], b->strs[j], a->str_lens[j]),
                                  "%s[%llu]", a->key, (unsigned long long)j);
                    else
                        cr_assert_eq(as_gguf_arr_f64(a, j), as_gguf_arr_f64(b, j), "%s[%llu]", a->key,
                                     (unsigned long long)j);
            }
        }
    cr_assert_geq(keys, 2 * 4, "only %d tokenizer keys", keys);
    const as_gguf_kv *tok = as_gguf_find(g[0], "tokenizer.ggml.tokens");
    cr_assert(tok && tok->arr_len == 2048, "austen-moe's vocabulary is not 2,048 pieces");
    as_gguf_close(g[0]);
    as_gguf_close(g[1]);
    const char *text = "My dear Mr. Bennet, said his lady to him one day, have you heard that Netherfield Park is let "
                       "at last?";
    as_session *s[2];
    const int32_t *ids[2];
    int n[2];
    for (int i = 0; i < 2; i++) {
        char cmd[256];
        s[i] = open_session(path[i], 64);
        snprintf(cmd, sizeof cmd, "prompt \"%s\"", text);
        run_ok(s[i], cmd);
        ids[i] = s[i]->it->out->tokens;
        n[i] = s[i]->it->out->n_tokens;
    }
    cr_assert_eq(n[0], n[1]);
    cr_assert_geq(n[0], 20);
    cr_assert(!memcmp(ids[0], ids[1], (size_t)n[0] * sizeof *ids[0]), "the two tokenize the passage differently");
    close_session(s[0]);
    close_session(s[1]);
}

/* Max abs difference of two files' logits over a recipe's tokens (a
 * prompt pass: panels of decoded rows into sgemm), and, when decode is
 * set, over 8 greedy tokens generated after them (one position at a
 * time: the fused decode-and-dot kernels). */
static double logit_distance(const char *name, const char *x, const char *y, bool decode)
{
    char tok_path[256], cmd[8192];
    snprintf(tok_path, sizeof tok_path, "fixtures/models/%s.tokens.npy", name);
    npy tok;
    cr_assert_eq(npy_read(tok_path, &tok), 0);
    as_session *a = open_session(x, 256), *b = open_session(y, 256);
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "prompt-ids");
    for (size_t i = 0; i < tok.count; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", tok.i[i]);
    run_ok(a, cmd);
    run_ok(b, cmd);
    run_ok(a, "finish");
    run_ok(b, "finish");
    if (decode) {
        run_ok(a, "set temp 0; gen 8");
        run_ok(b, "set temp 0; gen 8");
        cr_assert_eq(memcmp(a->it->out->tokens, b->it->out->tokens, (size_t)a->it->out->n_tokens * 4), 0,
                     "%s: the two files generate different tokens", name);
    }
    int V = a->model->cfg.n_vocab, lg = as_program_hook(a->prog, AS_HK_LOGITS, -1);
    double worst = 0;
    for (int p = 0; p < a->it->out->n_tokens; p++)
        for (int v = 0; v < V; v++)
            worst = fmax(worst, fabs(as_capture_row(a->cap, lg, p)[v] - as_capture_row(b->cap, lg, p)[v]));
    close_session(a);
    close_session(b);
    npy_free(&tok);
    return worst;
}

static size_t weight_bytes(const char *path)
{
    as_session *s = open_session(path, 0);
    size_t n = s->model->weight_bytes;
    close_session(s);
    return n;
}

/* The shipped models stored as F16, BF16 and Q8_0 (copies written here by
 * the project's own conversions) run from their stored types, decoded in
 * the kernels:
 * - against the same weights decoded to float32 by the reference
 *   dequantizer (quant.c) and run as F32, prompt and greedy decode: 2e-4
 *   (the fused kernels sum in another order than the F32 ones; logits
 *   reach ~20), so a wrong block layout or scale fails;
 * - against the F32 original: the measured worst differences (F16 0.009,
 *   BF16 0.062, Q8_0 0.32 on austen-llama) with about 2x room, what the
 *   types' rounding costs (11, 8 bits; one 8-bit step per block of 32);
 * - and the weights in memory are the stored bytes, not float32. */
static void check_typed_copy(const char *name, as_ggml_type type, double bound)
{
    /* float32 activations: the stored type against the same weights decoded
     * to F32 (native arithmetic, the default for Q8_0, is test_qdot.c's) */
    cr_assert(as_set_activations("f32"));
    char gguf[256], copy[] = "/tmp/attnscope-typed-XXXXXX", back[] = "/tmp/attnscope-f32-XXXXXX";
    snprintf(gguf, sizeof gguf, "../models/%s.gguf", name);
    int fd = mkstemp(copy), fd2 = mkstemp(back);
    cr_assert(fd >= 0 && fd2 >= 0);
    close(fd);
    close(fd2);
    const char *tn = as_ggml_type_name(type);
    cr_assert_eq(write_typed_copy(gguf, copy, type), 0, "cannot write a %s copy of %s", tn, gguf);
    cr_assert_eq(write_typed_copy(copy, back, AS_GGML_F32), 0, "cannot decode the %s copy", tn);
    double exact = logit_distance(name, copy, back, true), lossy = logit_distance(name, gguf, copy, false);
    cr_log_info("%s as %s: %.3g from its own weights as F32, %.4g from the original (bound %.3g)", name, tn, exact,
                lossy, bound);
    cr_assert_leq(exact, 2e-4, "%s as %s: %.3g from the same weights decoded to F32", name, tn, exact);
    cr_assert_leq(lossy, bound, "%s as %s: max abs logit difference %.4g from the F32 file", name, tn, lossy);
    size_t typed = weight_bytes(copy), full = weight_bytes(gguf);
    cr_assert_lt(typed, full * (type == AS_GGML_Q8_0 ? 0.3 : 0.52), "%s as %s holds %zu bytes of weights, F32 %zu",
                 name, tn, typed, full);
    unlink(copy);
    unlink(back);
}

Test(models, typed_copies_run_in_their_stored_type)
{
    check_typed_copy("austen-llama", AS_GGML_F16, 0.02);
    check_typed_copy("austen-llama", AS_GGML_BF16, 0.15);
    check_typed_copy("austen-llama", AS_GGML_Q8_0, 0.65);
    check_typed_copy("austen-gpt2", AS_GGML_F16, 0.02);
    check_typed_copy("austen-gpt2", AS_GGML_Q8_0, 0.65);
}

/* vit-fashion against torchvision: each image of assets/fashion/ (the
 * first test image of each class, as train_vit.py wrote it) read by
 * `image`, its class logits at CLS within 1e-4 of torchvision's own
 * VisionTransformer with the same weights (the bound; they are
 * at most about ±15), and the same class on top. */
Test(models, vit_fashion_matches_torchvision)
{
    const char *gguf = "../models/vit-fashion.gguf";
    npy ref;
    cr_assert_eq(access(gguf, R_OK), 0, "%s is missing", gguf);
    cr_assert_eq(npy_read("fixtures/models/vit-fashion.logits.npy", &ref), 0);
    FILE *f = fopen("fixtures/models/vit-fashion.images.txt", "r");
    cr_assert(f);
    as_session *s = open_session(gguf, 64);
    char name[128], cmd[300];
    size_t row = 0;
    int V = s->model->cfg.n_vocab;
    cr_assert_eq(ref.shape[1], (size_t)V);
    while (fscanf(f, "%127s", name) == 1) {
        snprintf(cmd, sizeof cmd, "image ../assets/fashion/%s.png; finish", name);
        run_ok(s, cmd);
        const float *l = as_interp_logits(s->it), *r = ref.f + row * (size_t)V;
        cr_assert(l);
        double worst = 0;
        int best = 0, rbest = 0;
        for (int v = 0; v < V; v++) {
            worst = fmax(worst, fabs(l[v] - r[v]));
            best = l[v] > l[best] ? v : best;
            rbest = r[v] > r[rbest] ? v : rbest;
        }
        cr_assert_leq(worst, 1e-4, "%s: max abs logit difference %.3g", name, worst);
        cr_assert_eq(best, rbest, "%s: class %d, torchvision's %d", name, best, rbest);
        row++;
    }
    fclose(f);
    cr_assert_eq(row, ref.shape[0]);
    npy_free(&ref);
    close_session(s);
}
