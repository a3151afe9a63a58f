/* Instruments on non-finite data, and answers that are undefined: a NaN
 * in a model refuses a figure or a score, naming the hook and where in
 * its shape (or marks the cells), never a plausible-looking wrong answer.
 * The NaN model is built in memory (tests/fuzz/tiny_models.c, linked
 * through test_reliability.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/model.h"
#include "attnscope/session.h"
#include "fuzz/tiny_models.h"
#include "helpers.h"

typedef struct nan_run {
    as_session *s;
    uint8_t *buf;
    char *warn_text;
    size_t warn_len;
    FILE *warn, *out;
    char dir[64];
} nan_run;

/* tiny gpt2 (d_model 8, 2 heads of 4) whose q bias is NaN at element 6:
 * q's head 1, dim 2 at every position, so head 1's pattern is NaN and
 * everything after the attention; head 0's pattern stays finite. */
static void nan_open(nan_run *r, const char *prompt)
{
    memset(r, 0, sizeof *r);
    tiny_spec sp;
    tiny_default(&sp, false);
    sp.poison_tensor = "blk.0.attn_qkv.bias", sp.poison_value = NAN, sp.poison_at = 6;
    size_t n;
    as_gguf_writer *w = tiny_writer(&sp);
    cr_assert_not_null(w);
    cr_assert_eq(tiny_serialize(w, &r->buf, &n), 0);
    as_gguf *g;
    as_model *m;
    as_error err;
    cr_assert_eq(as_gguf_parse(&g, r->buf, n, "nan.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_model_from_gguf(&m, g, &err), AS_OK, "%s", err.msg);
    r->warn = open_memstream(&r->warn_text, &r->warn_len);
    r->out = fopen("/dev/null", "w");
    cr_assert_eq(as_session_from_model(&r->s, m, 4, r->out, r->warn, &err), AS_OK, "%s", err.msg);
    run_ok(r->s, prompt);
    fflush(r->warn);
    snprintf(r->dir, sizeof r->dir, "/tmp/attnscope-nan-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
}

static void nan_close(nan_run *r)
{
    as_session_free(r->s);
    fclose(r->warn), fclose(r->out);
    free(r->warn_text);
    free(r->buf);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", r->dir);
    cr_assert_eq(system(cmd), 0);
}

/* Runs `export ...` into the run's folder; returns its status, the message in msg. */
static int export_to(nan_run *r, const char *what, const char *file, char *msg, size_t cap, char *path)
{
    char cmd[256];
    snprintf(path, 128, "%s/%s", r->dir, file);
    snprintf(cmd, sizeof cmd, "export %s %s", what, path);
    return run_cmd(r->s, cmd, msg, cap);
}

Test(nonfinite, the_first_nan_is_located_by_the_hooks_shape)
{
    nan_run r;
    nan_open(&r, "prompt-ids 1 2 3 1 2; finish");
    const char *want = "warning: first non-finite value in this pass: blocks.0.attn.hook_q [position 0, head 1, dim 2] = nan";
    cr_assert(strstr(r.warn_text, want), "warnings: %s", r.warn_text);
    char msg[1024];
    cr_assert_eq(run_cmd(r.s, "top 3", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "logits at position 4 are NaN or Inf: no ranking. The first non-finite value of the pass is "
                          "blocks.0.attn.hook_q [position 0, head 1, dim 2] = nan"), "%s", msg);
    nan_close(&r);
}

Test(nonfinite, figures_refuse_nan_naming_the_hook_and_where)
{
    nan_run r;
    nan_open(&r, "prompt-ids 1 2 3 1 2; finish");
    char msg[1024], path[128];
    struct stat st;
    /* the head view: a NaN line would be drawn as nothing at all */
    cr_assert_eq(export_to(&r, "lines 0 1", "l1.png", msg, sizeof msg, path), AS_ERR);
    cr_assert(strstr(msg, "export lines: no figure: blocks.0.attn.hook_pattern holds nan at [head 1, query 0, key 0]; "
                          "the first non-finite value of the pass is blocks.0.attn.hook_q [position 0, head 1, dim 2]"),
              "%s", msg);
    cr_assert_neq(stat(path, &st), 0, "a refused figure left %s", path);
    cr_assert_eq(export_to(&r, "lines 0 all", "la.png", msg, sizeof msg, path), AS_ERR);
    cr_assert_eq(export_to(&r, "lines 0 0", "l0.png", msg, sizeof msg, path), AS_OK, "head 0 is finite: %s", msg);
    /* norms: ln2's input (resid_mid) is NaN; its statistics would be made up */
    cr_assert_eq(export_to(&r, "norms 0", "n.png", msg, sizeof msg, path), AS_ERR);
    cr_assert(strstr(msg, "export norms: no figure: blocks.0.ln2.hook_scale holds nan at [position 0, index 0]"), "%s",
              msg);
    cr_assert_eq(export_to(&r, "norms final", "nf.png", msg, sizeof msg, path), AS_ERR);
    cr_assert(strstr(msg, "ln_final.hook_scale holds nan"), "%s", msg);
    /* probabilities of NaN logits */
    cr_assert_eq(export_to(&r, "probs", "p.png", msg, sizeof msg, path), AS_ERR);
    cr_assert(strstr(msg, "logits at position 4 are NaN or Inf: no ranking"), "%s", msg);
    /* a heatmap marks the NaN cells (and says so under the figure) */
    cr_assert_eq(export_to(&r, "attn 0 1", "a.pdf", msg, sizeof msg, path), AS_OK, "%s", msg);
    cr_assert_eq(stat(path, &st), 0);
    nan_close(&r);
}

Test(nonfinite, head_scores_refuse_a_nan_pattern)
{
    nan_run r;
    nan_open(&r, "prompt-ids 1 2 3 1 2; finish");
    char msg[1024];
    cr_assert_eq(run_cmd(r.s, "heads context", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "heads: no scores: blocks.0.attn.hook_pattern holds nan at [head 1, query 0, key 0]"), "%s",
              msg);
    nan_close(&r);
}

/* ---- undefined answers and positions, on a finite model ---- */

Test(nonfinite, head_scores_over_no_repeat_say_undefined_not_nan)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    char *out = run_output(s, "prompt-ids 1 5 6 7; finish; heads context");
    cr_assert(strstr(out, "duplicate-token\nundefined: no token repeats\n"), "%s", out);
    cr_assert(strstr(out, "induction\nundefined: no token repeats\n"), "%s", out);
    cr_assert(!strstr(out, "nan"), "%s", out);
    free(out);
    /* a repeat right after itself: duplicate is defined, induction is not */
    out = run_output(s, "prompt-ids 1 5 5 6; finish; heads context");
    cr_assert(!strstr(out, "duplicate-token\nundefined"), "%s", out);
    cr_assert(strstr(out, "induction\nundefined: no token repeats with another token between"), "%s", out);
    free(out);
    close_session(s);
}

Test(nonfinite, heads_context_refuses_patterns_not_captured)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 0);
    char msg[1024];
    run_ok(s, "prompt-ids 1 5 6 1 5; finish");
    cr_assert_eq(run_cmd(s, "heads context", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "heads needs every layer's attention pattern, but blocks.0.attn.hook_pattern is not captured"),
              "%s", msg);
    close_session(s);
}

Test(nonfinite, top_takes_a_position_on_a_decoder)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    char msg[512];
    char *at1 = run_output(s, "prompt-ids 1 5 6 7; finish; top 4 1");
    char *last = run_output(s, "prompt-ids 1 5; finish; top 4");
    cr_assert(strstr(at1, "next token after position 1:\n"), "%s", at1);
    /* the same logits as a context that ends at position 1 */
    cr_assert_str_eq(strstr(at1, "rank"), strstr(last, "rank"));
    free(at1), free(last);
    run_ok(s, "prompt-ids 1 5 6 7; finish");
    cr_assert_eq(run_cmd(s, "top 5 99999", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "the position must be a whole number from 0 to 3, not '99999'"), "%s", msg);
    cr_assert_eq(run_cmd(s, "top 5 -1", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "from 0 to 3, not '-1'"), "%s", msg);
    close_session(s);
}
