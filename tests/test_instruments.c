/* Instruments checked against computations done here independently:
 * the lens at the last layer is the real logits, DLA terms sum to the
 * logit, ablating every head leaves only the output bias, patching a
 * prompt into itself changes nothing, head scores on hand-made patterns. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "attnscope/colormap.h"
#include "attnscope/instruments.h"
#include "helpers.h"

#define GPT2 "fixtures/tiny-gpt2.gguf"
#define LLAMA "fixtures/tiny-llama.gguf"
#define PROMPT "prompt-ids 1 40 41 42 43 44 45 40 41 42"

Test(instruments, lens_at_the_last_layer_is_the_logits)
{
    const char *models[] = {GPT2, LLAMA};
    for (int m = 0; m < 2; m++) {
        as_session *s = open_session(models[m], 64);
        run_ok(s, PROMPT "; finish");
        int V = s->model->cfg.n_vocab, last = as_program_hook(s->prog, AS_HK_RESID_POST, s->model->cfg.n_layer - 1);
        int lg = as_program_hook(s->prog, AS_HK_LOGITS, -1);
        float *out = malloc((size_t)V * sizeof *out);
        for (int p = 0; p < s->it->out->n_tokens; p++) {
            as_lens_logits(s->prog, as_capture_row(s->cap, last, p), out);
            const float *real = as_capture_row(s->cap, lg, p);
            for (int v = 0; v < V; v++)
                cr_assert_float_eq(out[v], real[v], 1e-5, "%s pos %d token %d: %g vs %g", models[m], p, v, out[v], real[v]);
        }
        free(out);
        close_session(s);
    }
}

Test(instruments, dla_terms_sum_to_the_logit)
{
    const char *models[] = {GPT2, LLAMA};
    for (int m = 0; m < 2; m++) {
        as_session *s = open_session(models[m], 64);
        run_ok(s, PROMPT "; finish");
        for (int pos = 0; pos < s->it->out->n_tokens; pos += 3) {
            for (int32_t tok = 0; tok < s->model->cfg.n_vocab; tok += 37) {
                as_dla d;
                as_error err;
                cr_assert_eq(as_dla_compute(s->cap, s->it->out->tokens, pos, tok, &d, &err), AS_OK, "%s", err.msg);
                double sum = d.constant;
                for (int i = 0; i < d.n_terms; i++)
                    sum += d.terms[i].value;
                int expect_terms = 1 + (m == 0) + s->model->cfg.n_layer * (s->model->cfg.n_head + 1 + (m == 0));
                cr_assert_eq(d.n_terms, expect_terms);
                cr_assert_float_eq(sum, d.logit, 1e-4, "%s pos %d tok %d: sum %g logit %g", models[m], pos, tok, sum, d.logit);
                as_dla_free(&d);
            }
        }
        close_session(s);
    }
}

Test(instruments, ablating_every_head_leaves_only_the_output_bias)
{
    const char *models[] = {GPT2, LLAMA};
    for (int m = 0; m < 2; m++) {
        as_session *s = open_session(models[m], 64);
        run_ok(s, PROMPT "; finish");
        for (int h = 0; h < s->model->cfg.n_head; h++) {
            char cmd[64];
            snprintf(cmd, sizeof cmd, "ablate 1.%d zero", h);
            run_ok(s, cmd);
        }
        run_ok(s, "compare");
        int d = s->model->cfg.d_model;
        int ao = as_program_hook(s->prog, AS_HK_ATTN_OUT, 1), pre = as_program_hook(s->prog, AS_HK_RESID_PRE, 1),
            mid = as_program_hook(s->prog, AS_HK_RESID_MID, 1);
        const float *bias = as_program_producer(s->prog, ao)->b;
        for (int p = 0; p < s->it->out->n_tokens; p++)
            for (int i = 0; i < d; i++) {
                float want = bias ? bias[i] : 0.0f;
                cr_assert_float_eq(as_capture_row(s->cap, ao, p)[i], want, 1e-6, "%s: attn_out[%d][%d]", models[m], p, i);
                cr_assert_float_eq(as_capture_row(s->cap, mid, p)[i], as_capture_row(s->cap, pre, p)[i] + want, 1e-6);
            }
        close_session(s);
    }
}

Test(instruments, mean_ablation_sets_the_context_mean)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, PROMPT "; finish");
    int hz = as_program_hook(s->prog, AS_HK_Z, 0), dh = s->model->cfg.d_head, n = s->it->out->n_tokens;
    float mean[64] = {0};
    for (int p = 0; p < n; p++)
        for (int i = 0; i < dh; i++)
            mean[i] += as_capture_row(s->cap, hz, p)[2 * dh + i] / (float)n;
    run_ok(s, "ablate 0.2 mean; compare");
    for (int p = 0; p < n; p++)
        for (int i = 0; i < dh; i++)
            cr_assert_float_eq(as_capture_row(s->cap, hz, p)[2 * dh + i], mean[i], 1e-6);
    close_session(s);
}

Test(instruments, patching_a_prompt_into_itself_changes_nothing)
{
    as_session *s = open_session(LLAMA, 64);
    run_ok(s, "prompt the cat sat; finish");
    int V = s->model->cfg.n_vocab;
    float *clean = malloc((size_t)V * sizeof *clean);
    memcpy(clean, as_interp_logits(s->it), (size_t)V * sizeof *clean);
    run_ok(s, "patch blocks.0.hook_resid_post from \"the cat sat\"");
    cr_assert_eq(memcmp(clean, as_interp_logits(s->it), (size_t)V * sizeof *clean), 0);
    char msg[1024];
    cr_assert_neq(run_cmd(s, "patch blocks.0.hook_resid_post from \"the\"", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "same count"), "%s", msg);
    free(clean);
    close_session(s);
}

Test(instruments, patch_sweep_matches_runs_of_the_other_prompt)
{
    /* The prompts differ only at the last token. Patching layer 0's input
     * at a position where the tokens agree changes nothing (the metric stays
     * clean); at the last position it makes the whole run the other
     * prompt's, so the metric becomes the other prompt's. */
    as_session *s = open_session(LLAMA, 64), *o = open_session(LLAMA, 64);
    run_ok(o, "prompt the cat on; finish");
    run_ok(s, "prompt the cat sat; finish; metric 40 41");
    const float *ol = as_interp_logits(o->it), *cl = as_interp_logits(s->it);
    double other = ol[40] - ol[41], clean = cl[40] - cl[41];
    cr_assert(fabs(other - clean) > 1e-3, "the prompts should differ in the metric");
    char path[] = "/tmp/attnscope-sweep-XXXXXX.npy", cmd[256];
    int fd = mkstemps(path, 4);
    close(fd);
    snprintf(cmd, sizeof cmd, "patch sweep resid_pre from \"the cat on\" %s", path);
    run_ok(s, cmd);
    npy t;
    cr_assert_eq(npy_read(path, &t), 0);
    unlink(path);
    cr_assert_eq(t.ndim, 2);
    cr_assert_eq(t.shape[0], 2);
    cr_assert_eq(t.shape[1], 4);
    for (int p = 0; p < 3; p++)
        cr_assert_float_eq(t.f[p], clean, 1e-5, "position %d: %g vs clean %g", p, t.f[p], clean);
    cr_assert_float_eq(t.f[3], other, 1e-5, "last position: %g vs other %g", t.f[3], other);
    npy_free(&t);
    close_session(s);
    close_session(o);
}

/* A capture with hand-made patterns for one head. */
Test(instruments, head_scores_on_hand_made_patterns)
{
    as_session *s = open_session(GPT2, 64);
    int hook = as_program_hook(s->prog, AS_HK_PATTERN, 0), n = 9;
    int32_t toks[9] = {1, 5, 6, 7, 8, 5, 6, 7, 8};
    as_capture *cap = s->cap;
    /* head 0: previous token; head 1: first token; head 2: induction; head 3: duplicate */
    memset(cap->store[hook], 0, as_capture_hook_bytes(s->prog, hook, cap->capacity[s->prog->hooks[hook].stream]));
    for (int q = 0; q < n; q++) {
        cap->store[hook][as_capture_attn_offset(cap, hook, 0, q) + (q ? q - 1 : 0)] = 1;
        cap->store[hook][as_capture_attn_offset(cap, hook, 1, q) + 0] = 1;
        cap->store[hook][as_capture_attn_offset(cap, hook, 2, q) + (q >= 5 ? q - 3 : q)] = 1;
        cap->store[hook][as_capture_attn_offset(cap, hook, 3, q) + (q >= 5 ? q - 4 : q)] = 1;
    }
    cr_assert_float_eq(as_head_score_of(cap, hook, 0, toks, n, AS_SCORE_PREV_TOKEN), 1.0, 1e-9);
    cr_assert_float_eq(as_head_score_of(cap, hook, 1, toks, n, AS_SCORE_PREV_TOKEN), 1.0 / 8, 1e-9);
    cr_assert_float_eq(as_head_score_of(cap, hook, 1, toks, n, AS_SCORE_FIRST_TOKEN), 1.0, 1e-9);
    cr_assert_float_eq(as_head_score_of(cap, hook, 2, toks, n, AS_SCORE_INDUCTION), 1.0, 1e-9);
    cr_assert_float_eq(as_head_score_of(cap, hook, 3, toks, n, AS_SCORE_INDUCTION), 0.0, 1e-9);
    cr_assert_float_eq(as_head_score_of(cap, hook, 3, toks, n, AS_SCORE_DUPLICATE), 1.0, 1e-9);
    close_session(s);
}

Test(instruments, induction_probe_repeats_distinct_tokens)
{
    int32_t out[65];
    int n = as_induction_probe(out, 7, 32, 10, 200, 99);
    cr_assert_eq(n, 65);
    cr_assert_eq(out[0], 7);
    for (int i = 1; i <= 32; i++) {
        cr_assert(out[i] >= 10 && out[i] < 200);
        cr_assert_eq(out[i], out[i + 32]);
        for (int j = 1; j < i; j++)
            cr_assert_neq(out[i], out[j]);
    }
}


Test(instruments, induction_model_has_an_induction_head)
{
    /* The bundled teaching model (models/README.md): the detector, on its
     * repeated random-token probe, finds a head scoring >= 0.5. */
    as_session *s = open_session("../models/induction.gguf", 64);
    const as_config *cfg = &s->model->cfg;
    int32_t ids[80];
    int n = as_induction_probe(ids, as_tokenizer_bos(s->model->tok), 32, 0, cfg->n_vocab - 1, 5);
    as_error err;
    cr_assert_eq(as_interp_set_tokens(s->it, ids, n, &err), AS_OK, "%s", err.msg);
    run_ok(s, "finish");
    double best = 0;
    for (int l = 0; l < cfg->n_layer; l++)
        for (int h = 0; h < cfg->n_head; h++)
            best = fmax(best, as_head_score_of(s->cap, as_program_hook(s->prog, AS_HK_PATTERN, l), h, ids, n,
                                               AS_SCORE_INDUCTION));
    cr_assert_geq(best, 0.5, "best induction score %.3f", best);
    close_session(s);
}

Test(instruments, watch_stops_continue_and_reports_the_hook)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "watch blocks.1.attn.hook_pattern max > 0.99; prompt-ids 1 40 41; continue");
    cr_assert(s->it->in_pass);
    const as_op *prev = as_interp_current(s->it) - 1;
    cr_assert_str_eq(s->prog->hooks[prev->out].name, "blocks.1.attn.hook_pattern");
    /* Position 0 attends only to itself: weight exactly 1. */
    cr_assert_eq(s->it->watch_hit.pos, 0);
    cr_assert_float_eq(s->it->watch_hit.value, 1.0, 1e-6);
    run_ok(s, "unwatch; continue");
    cr_assert(!s->it->in_pass);
    close_session(s);
}

Test(instruments, weight_stats_match_a_direct_computation)
{
    as_session *s = open_session(GPT2, 64);
    const as_gguf_tensor *t = as_gguf_tensor_find(s->model->gguf, "blk.1.ffn_up.weight");
    as_weight_stats st;
    as_error err;
    cr_assert_eq(as_weight_stats_of(t, &st, &err), AS_OK);
    /* The weights as the model holds them (F32: in place in the map). */
    const as_weight *wt = &as_program_producer(s->prog, as_program_hook(s->prog, AS_HK_MLP_PRE, 1))->w;
    cr_assert_eq(wt->type, AS_GGML_F32);
    const float *w = wt->data;
    double sum = 0, sq = 0, mn = w[0], mx = w[0];
    for (uint64_t i = 0; i < t->n_elements; i++) {
        sum += w[i];
        sq += (double)w[i] * w[i];
        mn = fmin(mn, w[i]);
        mx = fmax(mx, w[i]);
    }
    cr_assert_float_eq(st.mean, sum / t->n_elements, 1e-9);
    cr_assert_float_eq(st.norm, sqrt(sq), 1e-6);
    cr_assert_float_eq(st.min, mn, 0);
    cr_assert_float_eq(st.max, mx, 0);
    uint64_t total = 0;
    for (int b = 0; b < AS_HIST_BINS; b++)
        total += st.hist[b];
    cr_assert_eq(total, t->n_elements);
    double rel, dn, na;
    cr_assert_eq(as_weight_diff(t, t, &rel, &dn, &na, &err), AS_OK);
    cr_assert_eq(rel, 0.0);
    close_session(s);
}

/* ---- exports of the instruments' tables (.npy, and the sweep's figure) ---- */

static void tmp_path(char *path, size_t cap, const char *ext)
{
    snprintf(path, cap, "/tmp/attnscope-inst-XXXXXX%s", ext);
    int fd = mkstemps(path, (int)strlen(ext));
    cr_assert_geq(fd, 0);
    close(fd);
}

Test(instruments, lens_arrays_match_the_logits_and_their_argmax)
{
    /* The lens array's last row is the final residual through the final
     * norm and unembedding: the model's own logits there (1e-5, as the
     * lens test above); the table's last row is their argmax. */
    const char *models[] = {GPT2, LLAMA};
    for (int m = 0; m < 2; m++) {
        as_session *s = open_session(models[m], 64);
        run_ok(s, PROMPT "; finish");
        int V = s->model->cfg.n_vocab, L = s->model->cfg.n_layer, n = s->it->out->n_tokens;
        int lg = as_program_hook(s->prog, AS_HK_LOGITS, -1);
        char a[64], t[64], cmd[160];
        tmp_path(a, sizeof a, ".npy");
        tmp_path(t, sizeof t, ".npy");
        snprintf(cmd, sizeof cmd, "lens 4 %s; lens table %s", a, t);
        run_ok(s, cmd);
        npy la, lt;
        cr_assert_eq(npy_read(a, &la), 0);
        cr_assert_eq(npy_read(t, &lt), 0);
        unlink(a), unlink(t);
        cr_assert_eq(la.ndim, 2);
        cr_assert_eq(la.shape[0], (size_t)L + 1);
        cr_assert_eq(la.shape[1], (size_t)V);
        const float *real = as_capture_row(s->cap, lg, 4);
        for (int v = 0; v < V; v++)
            cr_assert_float_eq(la.f[(size_t)L * V + v], real[v], 1e-5, "%s token %d", models[m], v);
        /* Row 0 is the embeddings: not the final logits. */
        double diff = 0;
        for (int v = 0; v < V; v++)
            diff = fmax(diff, fabs(la.f[v] - real[v]));
        cr_assert_gt(diff, 1e-3, "%s: the embedding row equals the final logits", models[m]);
        cr_assert(lt.i != NULL, "the table is int32");
        cr_assert_eq(lt.shape[0], (size_t)L + 1);
        cr_assert_eq(lt.shape[1], (size_t)n);
        for (int p = 0; p < n; p++) {
            const float *r = as_capture_row(s->cap, lg, p);
            int best = 0;
            for (int v = 1; v < V; v++)
                best = r[v] > r[best] ? v : best;
            cr_assert_eq(lt.i[(size_t)L * n + p], best, "%s position %d", models[m], p);
        }
        npy_free(&la), npy_free(&lt);
        close_session(s);
    }
}

Test(instruments, dla_array_sums_to_the_logit_and_holds_each_head)
{
    const char *models[] = {GPT2, LLAMA};
    for (int m = 0; m < 2; m++) {
        as_session *s = open_session(models[m], 64);
        run_ok(s, PROMPT "; finish");
        const as_config *cfg = &s->model->cfg;
        char path[64], cmd[128];
        tmp_path(path, sizeof path, ".npy");
        snprintf(cmd, sizeof cmd, "dla 42 5 %s", path);
        run_ok(s, cmd);
        npy d;
        cr_assert_eq(npy_read(path, &d), 0);
        unlink(path);
        cr_assert_eq(d.ndim, 2);
        cr_assert_eq(d.shape[0], (size_t)cfg->n_layer + 1);
        cr_assert_eq(d.shape[1], (size_t)cfg->n_head + 2);
        as_dla ref;
        as_error err;
        cr_assert_eq(as_dla_compute(s->cap, s->it->out->tokens, 5, 42, &ref, &err), AS_OK, "%s", err.msg);
        double sum = 0;
        for (size_t i = 0; i < d.count; i++)
            sum += d.f[i];
        cr_assert_float_eq(sum, ref.logit, 1e-4, "%s: array sums to %g, logit %g", models[m], sum, ref.logit);
        for (int i = 0; i < ref.n_terms; i++)
            if (ref.terms[i].head >= 0)
                cr_assert_float_eq(d.f[(size_t)ref.terms[i].layer * d.shape[1] + (size_t)ref.terms[i].head],
                                   ref.terms[i].value, 1e-6, "%s %s", models[m], ref.terms[i].name);
        as_dla_free(&ref);
        npy_free(&d);
        close_session(s);
    }
}

Test(instruments, heads_array_finds_the_induction_head)
{
    /* [score kind, layer, head]: the induction slice holds the bundled
     * induction model's head (>= 0.5), the previous-token slice a head
     * in layer 0 (the circuit's first half), all within [0, 1]. */
    as_session *s = open_session("../models/induction.gguf", 64);
    const as_config *cfg = &s->model->cfg;
    char path[64], cmd[128];
    tmp_path(path, sizeof path, ".npy");
    snprintf(cmd, sizeof cmd, "heads %s", path);
    run_ok(s, cmd);
    npy h;
    cr_assert_eq(npy_read(path, &h), 0);
    unlink(path);
    cr_assert_eq(h.ndim, 3);
    /* a decoder's scores: all but next-token (an encoder's alone) */
    cr_assert_eq(h.shape[0], AS_SCORE_NEXT_TOKEN);
    cr_assert_eq(h.shape[1], (size_t)cfg->n_layer);
    cr_assert_eq(h.shape[2], (size_t)cfg->n_head);
    size_t per = (size_t)cfg->n_layer * cfg->n_head;
    double ind = 0, prev0 = 0;
    for (size_t i = 0; i < per; i++) {
        ind = fmax(ind, h.f[AS_SCORE_INDUCTION * per + i]);
        for (int k = 0; k < AS_SCORE_NEXT_TOKEN; k++)
            cr_assert(h.f[k * per + i] >= 0 && h.f[k * per + i] <= 1, "score %g", h.f[k * per + i]);
    }
    for (int i = 0; i < cfg->n_head; i++)
        prev0 = fmax(prev0, h.f[AS_SCORE_PREV_TOKEN * per + (size_t)i]);
    cr_assert_geq(ind, 0.5, "best induction score %.3f", ind);
    cr_assert_geq(prev0, 0.3, "best previous-token score in layer 0: %.3f", prev0);
    npy_free(&h);
    close_session(s);
}

/* Pixels of a PNG that have exactly this colour. */
static long count_colour(const char *path, const uint8_t rgb[3])
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    png_image im = {.version = PNG_IMAGE_VERSION};
    cr_assert(png_image_begin_read_from_stdio(&im, f), "%s", im.message);
    im.format = PNG_FORMAT_RGB;
    uint8_t *px = malloc(PNG_IMAGE_SIZE(im));
    cr_assert(png_image_finish_read(&im, NULL, px, 0, NULL), "%s", im.message);
    fclose(f);
    long n = 0;
    for (size_t i = 0; i < (size_t)im.width * im.height; i++)
        n += !memcmp(px + 3 * i, rgb, 3);
    free(px);
    return n;
}

Test(instruments, heads_and_dla_figures_colour_their_cells)
{
    /* The induction model's best induction head, in the heads figure, has
     * the colour of its score on the 0-1 viridis scale; in the DLA figure
     * the largest contribution has its colour on the diverging scale. */
    as_session *s = open_session("../models/induction.gguf", 64);
    const as_config *cfg = &s->model->cfg;
    char npy_path[64], png[64], dpng[64], dnpy[64], cmd[256];
    tmp_path(npy_path, sizeof npy_path, ".npy");
    tmp_path(png, sizeof png, ".png");
    tmp_path(dpng, sizeof dpng, ".png");
    tmp_path(dnpy, sizeof dnpy, ".npy");
    snprintf(cmd, sizeof cmd, "heads %s; heads %s dpi=100", npy_path, png);
    run_ok(s, cmd);
    npy h;
    cr_assert_eq(npy_read(npy_path, &h), 0);
    size_t per = (size_t)cfg->n_layer * cfg->n_head;
    float best = 0;
    for (size_t i = 0; i < per; i++)
        best = fmaxf(best, h.f[AS_SCORE_INDUCTION * per + i]);
    uint8_t rgb[3];
    as_colormap(AS_CMAP_VIRIDIS, best, rgb);
    cr_assert_gt(count_colour(png, rgb), 25, "no cell of the induction head's colour");
    snprintf(cmd, sizeof cmd, "prompt \"abcdefgh abcdefgh\"; finish; dla h %s; dla h %s", dnpy, dpng);
    run_ok(s, cmd);
    npy d;
    cr_assert_eq(npy_read(dnpy, &d), 0);
    double a = 1, big = 0;
    for (size_t i = 0; i < (size_t)cfg->n_layer * d.shape[1]; i++) {
        a = fmax(a, fabs(d.f[i]));
        big = fabs(d.f[i]) > fabs(big) ? d.f[i] : big;
    }
    as_colormap(AS_CMAP_RDBU, (float)((big + a) / (2 * a)), rgb);
    cr_assert_gt(count_colour(dpng, rgb), 25, "no cell of the largest contribution's colour (%g of %g)", big, a);
    unlink(npy_path), unlink(png), unlink(dpng), unlink(dnpy);
    npy_free(&h), npy_free(&d);
    close_session(s);
}

Test(instruments, patch_sweep_figure_colours_the_patched_cell)
{
    /* Prompts differing only at the last token (as above): layer 0's input
     * patched at the last position moves the metric all the way (effect 1),
     * elsewhere not at all (effect 0). On the diverging scale, ±max|effect|,
     * those cells have the colours of 0.5 + 0.5/a and 0.5 exactly. */
    as_session *s = open_session(LLAMA, 64);
    run_ok(s, "prompt the cat sat; finish; metric 40 41");
    char npy_path[64], png[64], svg[64], cmd[256];
    tmp_path(npy_path, sizeof npy_path, ".npy");
    tmp_path(png, sizeof png, ".png");
    tmp_path(svg, sizeof svg, ".svg");
    snprintf(cmd, sizeof cmd, "patch sweep resid_pre from \"the cat on\" %s", npy_path);
    run_ok(s, cmd);
    snprintf(cmd, sizeof cmd, "patch sweep resid_pre from \"the cat on\" %s dpi=100", png);
    run_ok(s, cmd);
    snprintf(cmd, sizeof cmd, "patch sweep heads from \"the cat on\" %s", svg);
    run_ok(s, cmd);
    npy t;
    cr_assert_eq(npy_read(npy_path, &t), 0);
    const float *cl = as_interp_logits(s->it);
    double clean = cl[40] - cl[41], other = t.f[3], a = 1;
    for (size_t i = 0; i < t.count; i++)
        a = fmax(a, fabs((t.f[i] - clean) / (other - clean)));
    uint8_t full[3], none[3];
    as_colormap(AS_CMAP_RDBU, (float)(0.5 + 0.5 / a), full);
    as_colormap(AS_CMAP_RDBU, 0.5f, none);
    long n_full = count_colour(png, full), n_none = count_colour(png, none);
    cr_assert_gt(n_full, 25, "no cell of the patched position's colour (%d,%d,%d)", full[0], full[1], full[2]);
    cr_assert_gt(n_none, 3 * 25, "no unchanged cells (%d,%d,%d)", none[0], none[1], none[2]);
    /* The SVG: whole (it ends), titled (Cairo draws text as glyphs, so
     * the title is read from its <title>). */
    FILE *f = fopen(svg, "r");
    cr_assert(f);
    static char buf[1 << 22];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = '\0';
    fclose(f);
    cr_assert(len < sizeof buf - 1 && strstr(buf, "</svg>"));
    cr_assert(strstr(buf, "<title>Patching heads"));
    unlink(npy_path), unlink(png), unlink(svg);
    npy_free(&t);
    close_session(s);
}

Test(instruments, instrument_exports_refuse_bad_paths)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, PROMPT "; finish; metric 40 41");
    char msg[512];
    cr_assert_neq(run_cmd(s, "lens 3 /nonexistent/dir/x.npy", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "/nonexistent/dir/x.npy"), "%s", msg);
    cr_assert_neq(run_cmd(s, "patch sweep heads from \"a b c d e f g h i j\" out.txt", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "out.txt"), "%s", msg);
    cr_assert_neq(run_cmd(s, "lens 1 2 3", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "usage"), "%s", msg);
    close_session(s);
}

#define VIT "fixtures/tiny-vit.gguf"
#define VIT_IMAGE "image fixtures/tiny-vit/image.png"

/* Rollout of the tiny ViT's patterns against NumPy's (make_fixtures.py:
 * vit_fixtures.rollout, float64 from PyTorch's patterns), 1e-5; and the
 * .npy the command writes holds the same matrix. */
Test(instruments, rollout_equals_numpy)
{
    as_session *s = open_session(VIT, 64);
    run_ok(s, VIT_IMAGE "; finish");
    npy ref;
    cr_assert_eq(npy_read("fixtures/tiny-vit.rollout.npy", &ref), 0);
    int n = s->it->out->n_tokens;
    cr_assert_eq(ref.count, (size_t)n * (size_t)n);
    float *r = malloc(ref.count * sizeof *r);
    as_error err;
    cr_assert_eq(as_attn_rollout(s->cap, n, r, &err), AS_OK, "%s", err.msg);
    for (size_t i = 0; i < ref.count; i++)
        cr_assert_float_eq(r[i], ref.f[i], 1e-5, "rollout[%zu]: %g vs numpy %g", i, r[i], ref.f[i]);
    /* rows are distributions */
    for (int q = 0; q < n; q++) {
        double sum = 0;
        for (int k = 0; k < n; k++)
            sum += r[(size_t)q * (size_t)n + (size_t)k];
        cr_assert_float_eq(sum, 1.0, 1e-5);
    }
    char path[64], cmd[96];
    snprintf(path, sizeof path, "/tmp/attnscope-rollout-%d.npy", (int)getpid());
    snprintf(cmd, sizeof cmd, "rollout %s", path);
    run_ok(s, cmd);
    npy got;
    cr_assert_eq(npy_read(path, &got), 0);
    unlink(path);
    cr_assert_eq(got.ndim, 2);
    cr_assert_eq(memcmp(got.f, r, ref.count * sizeof *r), 0);
    npy_free(&got);
    npy_free(&ref);
    free(r);
    close_session(s);
}

Test(instruments, rollout_needs_bidirectional_attention_and_a_finished_pass)
{
    as_session *s = open_session(VIT, 64);
    char msg[1024];
    run_ok(s, VIT_IMAGE);
    cr_assert_neq(run_cmd(s, "rollout", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "finish"), "%s", msg);
    cr_assert_neq(run_cmd(s, "rollout out.txt", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, ".npy"), "%s", msg);
    close_session(s);
    s = open_session(GPT2, 64);
    run_ok(s, PROMPT "; finish");
    cr_assert_neq(run_cmd(s, "rollout", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "bidirectional"), "%s", msg);
    close_session(s);
}

/* The ViT's classes are its vocabulary: `top` names them at CLS, the
 * probabilities are the softmax of torchvision's logits (the fixture's
 * head.hook_out row 0). */
Test(instruments, vit_top_names_classes_at_cls)
{
    as_session *s = open_session(VIT, 64);
    run_ok(s, VIT_IMAGE "; finish");
    npy ref;
    cr_assert_eq(npy_read("fixtures/tiny-vit/head.hook_out.npy", &ref), 0);
    const float *l = as_interp_logits(s->it);
    cr_assert(l);
    int best = 0;
    for (int i = 0; i < 10; i++) {
        cr_assert_float_eq(l[i], ref.f[i], 1e-4);
        best = ref.f[i] > ref.f[best] ? i : best;
    }
    char buf[4096] = {0};
    FILE *out = fmemopen(buf, sizeof buf - 1, "w");
    FILE *keep = s->out;
    s->out = out;
    run_ok(s, "top 3");
    fclose(out);
    s->out = keep;
    const char *names[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
    char want[64];
    snprintf(want, sizeof want, "1\t%d\t%s\t", best, names[best]);
    cr_assert(strstr(buf, "classes at CLS"), "%s", buf);
    cr_assert(strstr(buf, want), "expected '%s' in:\n%s", want, buf);
    npy_free(&ref);
    close_session(s);
}

/* A bad image leaves the session as it was: the image before it stays the
 * input, and the next good one is read. */
Test(instruments, vit_session_goes_on_after_a_bad_image)
{
    as_session *s = open_session(VIT, 64);
    char msg[1024];
    run_ok(s, VIT_IMAGE "; finish");
    float before[10];
    memcpy(before, as_interp_logits(s->it), sizeof before);
    const char *bad[] = {"image fixtures/image/none.png", "image fixtures/tiny-vit/meta.json",
                         "image fixtures/tiny-vit.gguf"};
    for (int i = 0; i < 3; i++) {
        cr_assert_neq(run_cmd(s, bad[i], msg, sizeof msg), AS_OK);
        cr_assert(strstr(msg, bad[i] + 6), "the message names the file: %s", msg);
        cr_assert_eq(memcmp(as_interp_logits(s->it), before, sizeof before), 0);
    }
    run_ok(s, "image fixtures/image/grey-45x37.png; finish; top 2");
    cr_assert_neq(memcmp(as_interp_logits(s->it), before, sizeof before), 0);
    close_session(s);
}

/* ---- diff: what an engineer debugging weights looks for ---- */

/* One tensor of a copy replaced: its type, shape and data (NULL: as it is). */
typedef struct tensor_edit {
    const char *name;
    as_ggml_type type;
    uint32_t n_dims;
    uint64_t ne[4];
    const void *data;
} tensor_edit;

typedef void (*key_edit)(as_gguf_writer *w, const as_gguf *g);

/* A copy of src with its tensors edited and its keys changed by keys(),
 * written to a fresh temporary file whose name goes into path. */
static void write_copy(const char *src, const tensor_edit *edits, int n_edits, key_edit keys, char *path, size_t cap)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, src, &err), AS_OK, "%s", err.msg);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    if (keys)
        keys(w, g);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        const tensor_edit *e = NULL;
        for (int k = 0; k < n_edits; k++)
            e = strcmp(edits[k].name, t->name) ? e : &edits[k];
        int rc = e ? as_gguf_writer_add_tensor(w, t->name, e->type, e->n_dims, e->ne, e->data, &err)
                   : as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err);
        cr_assert_eq(rc, AS_OK, "%s", err.msg);
    }
    tmp_path(path, cap, ".gguf");
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);
}

/* A float32 copy of one of the fixture's tensors, one element set to v. */
static float *tensor_with(const char *src, const char *name, uint64_t at, float v, tensor_edit *e)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, src, &err), AS_OK, "%s", err.msg);
    const as_gguf_tensor *t = as_gguf_tensor_find(g, name);
    cr_assert(t && t->type == AS_GGML_F32, "%s: no float32 %s", src, name);
    float *x = malloc(t->n_elements * sizeof *x);
    cr_assert(x);
    memcpy(x, t->data, t->n_elements * sizeof *x);
    x[at] = v;
    *e = (tensor_edit){name, t->type, t->n_dims, {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}, x};
    as_gguf_close(g);
    return x;
}

static char *diff_output(const char *model, const char *other)
{
    as_session *s = open_session(model, 16);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "diff %s", other);
    char *out = run_output(s, cmd); /* differences are the answer, not an error */
    close_session(s);
    return out;
}

#define ASSERT_HAS(out, text) cr_assert(strstr(out, text), "expected '%s' in:\n%s", text, out)

/* A NaN in layer 1's attention is found, counted and located, never cancelled. */
Test(instruments, diff_locates_a_nan_in_one_file)
{
    tensor_edit e;
    char path[64];
    float *x = tensor_with(LLAMA, "blk.1.attn_q.weight", 3 * 32 + 5, NAN, &e);
    write_copy(LLAMA, &e, 1, NULL, path, sizeof path);
    char *out = diff_output(LLAMA, path);
    unlink(path);
    free(x);
    ASSERT_HAS(out, "blk.1.attn_q.weight\tnon-finite\t0\t");
    ASSERT_HAS(out, "  B holds 1 NaN; the first, NaN, at (row 3, col 5), where A holds ");
    ASSERT_HAS(out, "\n1\tnon-finite\n");
    ASSERT_HAS(out, "\n1 tensor differs, 0 metadata keys differ, 1 tensor holds NaN or Inf\n");
    free(out);
}

/* Identical files that both hold a NaN still say so. */
Test(instruments, diff_reports_a_nan_both_files_hold)
{
    tensor_edit e;
    char a[64], b[64];
    float *x = tensor_with(LLAMA, "blk.0.attn_k.weight", 7 * 32 + 30, NAN, &e);
    write_copy(LLAMA, &e, 1, NULL, a, sizeof a);
    write_copy(LLAMA, &e, 1, NULL, b, sizeof b);
    char *out = diff_output(a, b);
    unlink(a);
    unlink(b);
    free(x);
    ASSERT_HAS(out, "blk.0.attn_k.weight\t0.000e+00\t0\t");
    ASSERT_HAS(out, "  both files hold NaN at (row 7, col 30) (1 NaN in each, at the same places)\n");
    ASSERT_HAS(out, "\n0 tensors differ, 0 metadata keys differ, 1 tensor holds NaN or Inf\n");
    free(out);
}

/* An Inf in the loaded model: located, and no "nan" printed for the
 * relative difference (inf / inf was -nan). */
Test(instruments, diff_of_an_inf_prints_no_nan)
{
    tensor_edit e;
    char path[64];
    float *x = tensor_with(LLAMA, "blk.0.attn_v.weight", 2 * 32 + 7, INFINITY, &e);
    write_copy(LLAMA, &e, 1, NULL, path, sizeof path);
    char *out = diff_output(path, LLAMA);
    unlink(path);
    free(x);
    cr_assert_null(strstr(out, "nan"), "'nan' printed:\n%s", out);
    ASSERT_HAS(out, "blk.0.attn_v.weight\tnon-finite\t");
    ASSERT_HAS(out, "  A holds 1 Inf; the first, +Inf, at (row 2, col 7), where B holds ");
    ASSERT_HAS(out, "\n0\tnon-finite\n");
    ASSERT_HAS(out, "\n1 tensor differs,");
    free(out);
}

/* A Q8_0 tensor whose block 4 has a NaN scale in the other file: the block
 * located by row and columns, and the values it spoils counted. */
Test(instruments, diff_locates_a_nan_block_scale)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, LLAMA, &err), AS_OK, "%s", err.msg);
    const as_gguf_tensor *t = as_gguf_tensor_find(g, "blk.0.ffn_down.weight"); /* [96, 32]: 3 blocks a row */
    cr_assert(t && t->type == AS_GGML_F32 && t->ne[0] == 96);
    size_t bytes = as_ggml_nbytes(AS_GGML_Q8_0, t->n_elements);
    uint8_t *q = malloc(bytes);
    cr_assert(q);
    as_quantize_q8_0((const float *)t->data, t->n_elements, q);
    tensor_edit e = {"blk.0.ffn_down.weight", AS_GGML_Q8_0, 2, {96, 32, 1, 1}, q};
    char a[64], b[64];
    write_copy(LLAMA, &e, 1, NULL, a, sizeof a);
    uint16_t nan16 = 0x7e00;
    memcpy(q + 4 * 34, &nan16, 2); /* block 4: row 1, cols 32..63; d is a block's first 2 bytes */
    write_copy(LLAMA, &e, 1, NULL, b, sizeof b);
    as_gguf_close(g);
    char *out = diff_output(a, b);
    unlink(a);
    unlink(b);
    free(q);
    ASSERT_HAS(out, "blk.0.ffn_down.weight\tnon-finite\t");
    ASSERT_HAS(out, "  B holds 1 of 96 Q8_0 blocks with a non-finite scale; the first, block 4 (row 1, cols 32..63), "
                    "scale NaN\n");
    ASSERT_HAS(out, "  B holds 32 NaN; the first, NaN, at (row 1, col 32), where A holds ");
    ASSERT_HAS(out, "\n1 tensor differs,");
    free(out);
}

static void rope_and_eos(as_gguf_writer *w, const as_gguf *g)
{
    (void)g;
    as_gguf_writer_set_f32(w, "llama.rope.freq_base", 500000.0f);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 1);
}

/* Hyperparameters and special ids are compared: both values on one line. */
Test(instruments, diff_reports_a_different_rope_base)
{
    char path[64];
    write_copy(LLAMA, NULL, 0, rope_and_eos, path, sizeof path);
    char *out = diff_output(LLAMA, path);
    unlink(path);
    ASSERT_HAS(out, "\nllama.rope.freq_base\t10000\t500000\n");
    ASSERT_HAS(out, "\ntokenizer.ggml.eos_token_id\t2 \"</s>\"\t1 \"<s>\"\n");
    ASSERT_HAS(out, "\n0 tensors differ, 2 metadata keys differ\n");
    free(out);
}

static void token_40(as_gguf_writer *w, const as_gguf *g)
{
    const as_gguf_kv *kv = as_gguf_find(g, "tokenizer.ggml.tokens");
    cr_assert(kv && kv->arr_type == AS_GGUF_STRING && kv->arr_len > 40);
    const char **strs = malloc(kv->arr_len * sizeof *strs);
    cr_assert(strs);
    for (uint64_t i = 0; i < kv->arr_len; i++)
        strs[i] = i == 40 ? "zebra" : kv->strs[i];
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, kv->arr_len);
    free(strs);
}

/* The vocabulary compared token by token: the first differing id with both strings. */
Test(instruments, diff_reports_a_different_vocabulary_token)
{
    char path[64], want[256];
    write_copy(LLAMA, NULL, 0, token_40, path, sizeof path);
    char *out = diff_output(LLAMA, path);
    unlink(path);
    as_session *s = open_session(LLAMA, 16);
    const char *was = as_gguf_find(s->model->gguf, "tokenizer.ggml.tokens")->strs[40]; /* "<0x25>": plain text */
    snprintf(want, sizeof want, "\ntokenizer.ggml.tokens\t[string \xc3\x97 289]\t[string \xc3\x97 289]\ttoken 40: \"%s\" in A, "
             "\"zebra\" in B (1 of 289 differs)\n", was);
    ASSERT_HAS(out, want);
    ASSERT_HAS(out, "\n0 tensors differ, 1 metadata key differs\n");
    close_session(s);
    free(out);
}

/* A shape mismatch in layer 0 is listed, and the comparison goes on to
 * find the real edit in layer 1. */
Test(instruments, diff_goes_on_past_a_shape_mismatch)
{
    tensor_edit e[2];
    char path[64];
    float *q = tensor_with(LLAMA, "blk.0.attn_q.weight", 0, 0.5f, &e[0]);
    e[0].ne[1] = 16; /* [32, 16]: the first half of the rows */
    float *x = tensor_with(LLAMA, "blk.1.ffn_up.weight", 10 * 32 + 4, 7.0f, &e[1]);
    write_copy(LLAMA, e, 2, NULL, path, sizeof path);
    char *out = diff_output(LLAMA, path);
    unlink(path);
    free(q);
    free(x);
    ASSERT_HAS(out, "\nblk.0.attn_q.weight\tshape [32, 32] in A, [32, 16] in B: values not compared\n");
    ASSERT_HAS(out, "\t(row 10, col 4)\n");
    cr_assert(strstr(out, "\nblk.1.ffn_up.weight\t"), "the edit in layer 1 is not reported:\n%s", out);
    ASSERT_HAS(out, "\n2 tensors differ, 0 metadata keys differ, 1 tensor's values not compared\n");
    free(out);
}

static void name_and_context(as_gguf_writer *w, const as_gguf *g)
{
    (void)g;
    as_gguf_writer_set_str(w, "general.name", "other");
    as_gguf_writer_set_u32(w, "llama.context_length", 64);
}

/* The summary in good grammar: one tensor differs, three tensors differ. */
Test(instruments, diff_summary_singular_and_plural)
{
    tensor_edit e[3];
    char one[64], three[64];
    float *x[3] = {tensor_with(LLAMA, "token_embd.weight", 100, 3.0f, &e[0]),
                   tensor_with(LLAMA, "blk.0.ffn_norm.weight", 1, 3.0f, &e[1]),
                   tensor_with(LLAMA, "output.weight", 2, 3.0f, &e[2])};
    write_copy(LLAMA, e, 1, NULL, one, sizeof one);
    write_copy(LLAMA, e, 3, name_and_context, three, sizeof three);
    char *a = diff_output(LLAMA, one), *b = diff_output(LLAMA, three);
    unlink(one);
    unlink(three);
    for (int i = 0; i < 3; i++)
        free(x[i]);
    ASSERT_HAS(a, "\n1 tensor differs, 0 metadata keys differ\n");
    ASSERT_HAS(b, "\n3 tensors differ, 2 metadata keys differ\n");
    free(a);
    free(b);
}
