/* The shipped models (models/NAME.gguf) against the PyTorch logits their
 * training recipe wrote (tests/fixtures/models/NAME.logits.npy, made by
 * models/recipes/train.py from the same weights): max abs diff 1e-3, the
 * issue's bound; the text models' logits reach about ±20. */
#include <criterion/criterion.h>
#include <math.h>
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
Test(models, austen_llama_matches_its_recipe) { check_model("austen-llama"); }
Test(models, induction_matches_its_recipe) { check_model("induction"); }
