/* Attention sites (attention.c) against a naive reference computed here in
 * double precision from the captured q, k and v: causal, unmasked
 * (bidirectional, stored as a rectangle), windowed and soft-capped sites,
 * with every row captured and with none (the dense working-memory path),
 * one position at a time (the KV cache) and a span at once. The masks and
 * caps are set on the fixture models' built programs, as a later
 * architecture file would set them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/attention_row.h"
#include "attnscope/capture.h"
#include "attnscope/interp.h"
#include "attnscope/kernels.h"
#include "attnscope/model.h"
#include "attnscope/program.h"

static const char *const models[] = {"fixtures/tiny-gpt2.gguf", "fixtures/tiny-llama.gguf"};

typedef struct run {
    as_model *m;
    as_program *p;
    as_capture *cap;
    as_interp *it;
} run;

typedef struct setup {
    as_mask mask;
    int window;
    float softcap;
    size_t budget;   /* capture bytes beyond the KV cache */
} setup;

static void open_run(run *r, const char *path, const setup *su)
{
    as_error err = {{0}};
    memset(r, 0, sizeof *r);
    cr_assert_eq(as_model_load(&r->m, path, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_program_build(&r->p, r->m, &err), AS_OK, "%s", err.msg);
    /* An unmasked site sees keys from later positions: its stream is
     * recomputed from position 0, never extended. */
    r->p->streams[0].causal = su->mask != AS_MASK_NONE;
    for (int a = 0; a < r->p->n_attn; a++) {
        r->p->attn[a].mask = su->mask;
        r->p->attn[a].window = su->window;
        r->p->attn[a].softcap = su->softcap;
    }
    cr_assert_eq(as_capture_new(&r->cap, r->p, su->budget, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_interp_new(&r->it, r->p, r->cap, &err), AS_OK, "%s", err.msg);
}

static void close_run(run *r)
{
    as_interp_free(r->it);
    as_capture_free(r->cap);
    as_program_free(r->p);
    as_model_free(r->m);
}

static void finish(run *r)
{
    as_error err = {{0}};
    as_stop stop;
    do
        cr_assert_eq(as_interp_run(r->it, AS_RUN_FINISH, 0, &stop, &err), AS_OK, "%s", err.msg);
    while (stop != AS_STOP_IDLE && stop != AS_STOP_PASS_END);
}

static void set_prompt(run *r, int n)
{
    as_error err = {{0}};
    int32_t ids[32];
    for (int i = 0; i < n; i++)
        ids[i] = (int32_t)((i * 37 + 11) % r->m->cfg.n_vocab);
    cr_assert_eq(as_interp_set_tokens(r->it, ids, n, &err), AS_OK, "%s", err.msg);
}

/* The naive site: for query q and head h, over every key the mask lets
 * it see, s = cap·tanh(q·k·scale / cap) (or q·k·scale), p = softmax(s),
 * z = Σ p·v. Checks scores and pattern (when captured) and z at 1e-5
 * (values are O(1); float32 sums of at most 64 terms). */
static void check_site(const run *r, const as_attn *a, int n)
{
    const as_capture *c = r->cap;
    int H = a->n_head, G = H / a->n_head_kv, d = a->d_qk, dv = a->d_v;
    bool keep = as_capture_has(c, a->pattern);
    for (int q = 0; q < n; q++)
        for (int h = 0; h < H; h++) {
            double s[64], mx = -INFINITY, sum = 0;
            const float *qv = as_capture_row(c, a->q, q) + h * d;
            for (int k = 0; k < n; k++) {
                s[k] = -INFINITY;
                if (!as_attn_visible(a, q, k))
                    continue;
                const float *kv = as_capture_row(c, a->k, k) + (h / G) * d;
                double dot = 0;
                for (int i = 0; i < d; i++)
                    dot += (double)qv[i] * kv[i];
                s[k] = dot * a->scale;
                if (a->softcap > 0)
                    s[k] = a->softcap * tanh(s[k] / a->softcap);
                mx = s[k] > mx ? s[k] : mx;
            }
            for (int k = 0; k < n; k++)
                sum += isfinite(s[k]) ? exp(s[k] - mx) : 0;
            for (int i = 0; i < dv; i++) {
                double z = 0;
                for (int k = 0; k < n; k++)
                    if (isfinite(s[k]))
                        z += exp(s[k] - mx) / sum * as_capture_row(c, a->v, k)[(h / G) * dv + i];
                cr_assert_float_eq(as_capture_row(c, a->z, q)[h * dv + i], z, 1e-5, "z L%d q%d h%d [%d]", a->layer,
                                   q, h, i);
            }
            for (int k = 0; keep && k < n; k++) {
                float got = as_capture_attn(c, a->pattern, h, q, k);
                double want = isfinite(s[k]) ? exp(s[k] - mx) / sum : 0;
                cr_assert_float_eq(got, want, 1e-5, "pattern L%d h%d q%d k%d", a->layer, h, q, k);
                float sc = as_capture_attn(c, a->scores, h, q, k);
                if (isfinite(s[k]))
                    cr_assert_float_eq(sc, s[k], 1e-4, "scores L%d h%d q%d k%d", a->layer, h, q, k);
                else
                    cr_assert(isinf(sc) && sc < 0, "hidden key L%d q%d k%d holds %g", a->layer, q, k, sc);
            }
        }
}

static void check_model(const char *path, const setup *su, int n, bool one_by_one)
{
    run r;
    open_run(&r, path, su);
    as_error err = {{0}};
    if (one_by_one) {
        /* Prompt of one token, then the rest appended one by one: the KV cache. */
        set_prompt(&r, n);
        int32_t ids[32];
        memcpy(ids, r.it->out->tokens, (size_t)n * sizeof *ids);
        cr_assert_eq(as_interp_set_tokens(r.it, ids, 1, &err), AS_OK);
        finish(&r);
        for (int i = 1; i < n; i++) {
            cr_assert_eq(as_interp_append(r.it, ids[i], &err), AS_OK, "%s", err.msg);
            finish(&r);
        }
    } else {
        set_prompt(&r, n);
        finish(&r);
    }
    for (int a = 0; a < r.p->n_attn; a++)
        check_site(&r, &r.p->attn[a], n);
    close_run(&r);
}

#define ALL (1u << 30)

Test(attention, causal_sites_match_the_naive_reference)
{
    for (int m = 0; m < 2; m++) {
        setup su = {AS_MASK_CAUSAL, 0, 0, ALL};
        check_model(models[m], &su, 9, false);
        check_model(models[m], &su, 9, true);
    }
}

Test(attention, unmasked_sites_store_rectangles_and_see_later_keys)
{
    for (int m = 0; m < 2; m++) {
        setup su = {AS_MASK_NONE, 0, 0, ALL};
        check_model(models[m], &su, 7, false);
        /* Appending to a stream that is not causal recomputes it whole. */
        check_model(models[m], &su, 7, true);
        run r;
        open_run(&r, models[m], &su);
        set_prompt(&r, 7);
        finish(&r);
        const as_attn *a = &r.p->attn[0];
        size_t shape[3];
        cr_assert_eq(as_capture_shape(r.cap, a->pattern, 7, shape), 3);
        cr_assert(shape[0] == (size_t)a->n_head && shape[1] == 7 && shape[2] == 7);
        cr_assert_eq(as_capture_attn_keys(r.cap, a->pattern, 0), 7, "query 0 sees all 7 keys");
        /* Query 0 attends to key 6: weight > 0 where a causal site has 0. */
        cr_assert_gt(as_capture_attn(r.cap, a->pattern, 0, 0, 6), 0.0f);
        close_run(&r);
    }
}

Test(attention, windowed_sites_hide_early_keys)
{
    for (int m = 0; m < 2; m++) {
        setup su = {AS_MASK_WINDOW, 3, 0, ALL};
        check_model(models[m], &su, 9, false);
        check_model(models[m], &su, 9, true);
    }
}

Test(attention, soft_capped_scores)
{
    for (int m = 0; m < 2; m++) {
        setup su = {AS_MASK_CAUSAL, 0, 0.5f, ALL};
        check_model(models[m], &su, 8, false);
        check_model(models[m], &su, 8, true);
    }
}

/* With no capture budget, scores and patterns live in dense working
 * memory [head][n_q][keys] instead of the capture's rows: the logits must
 * be the captured path's, for every kind of site. Not bit for bit: with
 * nothing captured only the last position's logits are computed, as a
 * matrix-vector product instead of a row of sgemm; 1e-4 (logits reach
 * ~13) holds a wrong row or a wrong mask to account. */
Test(attention, dense_working_memory_equals_the_captured_rows)
{
    setup kinds[] = {{AS_MASK_CAUSAL, 0, 0, 0}, {AS_MASK_NONE, 0, 0, 0}, {AS_MASK_WINDOW, 2, 0, 0},
                     {AS_MASK_CAUSAL, 0, 0.5f, 0}};
    for (int m = 0; m < 2; m++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            run full, bare;
            setup su = kinds[k];
            su.budget = ALL;
            open_run(&full, models[m], &su);
            open_run(&bare, models[m], &kinds[k]);
            set_prompt(&full, 8);
            set_prompt(&bare, 8);
            finish(&full);
            finish(&bare);
            const float *a = as_interp_logits(full.it), *b = as_interp_logits(bare.it);
            cr_assert(a && b);
            for (int i = 0; i < full.m->cfg.n_vocab; i++)
                cr_assert_float_eq(a[i], b[i], 1e-4, "%s kind %zu: logit %d differs: %g vs %g", models[m], k, i, a[i],
                                   b[i]);
            cr_assert(!as_capture_has(bare.cap, bare.p->attn[0].pattern), "budget 0 keeps no pattern");
            close_run(&full);
            close_run(&bare);
        }
}

/* ---------------------------------------------------------------- patterns on demand */

/* attention_row.c's row, against values worked out by hand: q = (1, 2),
 * keys (1, 0), (0, 1), (1, 1), scale 0.5 give scores 0.5, 1, 1.5 and the
 * softmax e^s / (e^0.5 + e + e^1.5) = 0.1863237, 0.3071959, 0.5064804;
 * a soft-cap of 1 makes them tanh(s) = 0.4621172, 0.7615942, 0.9051483; a
 * window of 2 at query 2 hides key 0 (-inf) and the softmax over keys 1
 * and 2 is 1 / (1 + e^0.5) = 0.3775407, 0.6224593. float32 against
 * 7-digit decimals: 1e-6. */
Test(attention, row_function_against_a_hand_computed_softmax)
{
    const float q[2] = {1, 2}, k[6] = {1, 0, 0, 1, 1, 1};
    as_attn a = {.d_qk = 2, .scale = 0.5f, .mask = AS_MASK_CAUSAL, .bias = -1};
    float s[3], p[3];
    as_attn_score_row(&a, q, k, 2, 2, 3, NULL, s);
    as_softmax(s, p, 3);
    const double want_s[3] = {0.5, 1.0, 1.5}, want_p[3] = {0.1863237, 0.3071959, 0.5064804};
    for (int i = 0; i < 3; i++) {
        cr_assert_float_eq(s[i], want_s[i], 1e-6, "score %d: %g", i, s[i]);
        cr_assert_float_eq(p[i], want_p[i], 1e-6, "weight %d: %g", i, p[i]);
    }
    a.softcap = 1;
    as_attn_score_row(&a, q, k, 2, 2, 3, NULL, s);
    const double capped[3] = {0.4621172, 0.7615942, 0.9051483};
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(s[i], capped[i], 1e-6, "capped score %d: %g", i, s[i]);
    a.softcap = 0, a.mask = AS_MASK_WINDOW, a.window = 2;
    as_attn_score_row(&a, q, k, 2, 2, 3, NULL, s);
    as_softmax(s, p, 3);
    cr_assert(isinf(s[0]) && s[0] < 0, "key 0 is outside the window: %g", s[0]);
    cr_assert_float_eq(p[0], 0, 0);
    cr_assert_float_eq(p[1], 0.3775407, 1e-6, "%g", p[1]);
    cr_assert_float_eq(p[2], 0.6224593, 1e-6, "%g", p[2]);
}

/* On demand, a site keeps no scores or pattern rows, and every row read
 * equals the stored run's bit for bit (the forward and the accessor run
 * the same row function) and the naive reference (check_site, 1e-5), for
 * every kind of site, after a span and after one position at a time. */
Test(attention, patterns_on_demand_equal_the_stored_rows)
{
    setup kinds[] = {{AS_MASK_CAUSAL, 0, 0, ALL}, {AS_MASK_NONE, 0, 0, ALL}, {AS_MASK_WINDOW, 3, 0, ALL},
                     {AS_MASK_CAUSAL, 0, 0.5f, ALL}};
    for (int m = 0; m < 2; m++)
        for (size_t kd = 0; kd < sizeof kinds / sizeof kinds[0]; kd++)
            for (int one = 0; one < 2; one++) {
                run st, od;
                open_run(&st, models[m], &kinds[kd]);
                open_run(&od, models[m], &kinds[kd]);
                run *both[2] = {&st, &od};
                for (int w = 0; w < 2; w++) {
                    as_error err = {{0}};
                    /* the setting is read when a context is computed anew */
                    cr_assert(as_set_patterns(w ? "on-demand" : "stored"));
                    set_prompt(both[w], 9);
                    if (one && kinds[kd].mask != AS_MASK_NONE) {
                        int32_t ids[32];
                        memcpy(ids, both[w]->it->out->tokens, 9 * sizeof *ids);
                        cr_assert_eq(as_interp_set_tokens(both[w]->it, ids, 1, &err), AS_OK);
                        finish(both[w]);
                        for (int i = 1; i < 9; i++) {
                            cr_assert_eq(as_interp_append(both[w]->it, ids[i], &err), AS_OK, "%s", err.msg);
                            finish(both[w]);
                        }
                    } else {
                        finish(both[w]);
                    }
                }
                cr_assert(as_set_patterns("auto"));
                cr_assert(!as_capture_patterns_on_demand(st.cap) && as_capture_patterns_on_demand(od.cap));
                for (int s = 0; s < od.p->n_attn; s++) {
                    const as_attn *a = &od.p->attn[s];
                    cr_assert(as_capture_has(od.cap, a->pattern) && !as_capture_stored(od.cap, a->pattern) &&
                                  !as_capture_stored(od.cap, a->scores),
                              "on demand: no rows stored, yet readable");
                    check_site(&od, a, 9);
                    for (int h = 0; h < a->n_head; h++)
                        for (int q = 0; q < 9; q++) {
                            int na, nb;
                            const float *x = as_capture_attn_row(st.cap, a->pattern, h, q, &na);
                            const float *y = as_capture_attn_row(od.cap, a->pattern, h, q, &nb);
                            cr_assert(na == nb && !memcmp(x, y, (size_t)na * sizeof *x),
                                      "%s kind %zu one %d: pattern L%d h%d q%d differs from the stored row", models[m],
                                      kd, one, a->layer, h, q);
                            x = as_capture_attn_row(st.cap, a->scores, h, q, &na);
                            y = as_capture_attn_row(od.cap, a->scores, h, q, &nb);
                            cr_assert(na == nb && !memcmp(x, y, (size_t)na * sizeof *x),
                                      "%s kind %zu one %d: scores L%d h%d q%d differ", models[m], kd, one, a->layer,
                                      h, q);
                        }
                }
                cr_assert_lt(od.cap->used, st.cap->used, "on demand holds less");
                close_run(&st);
                close_run(&od);
            }
}

/* ---------------------------------------------------------------- zoomed-out cells under a time bound */

/* The view's redraw bounds the work of making zoomed-out cells
 * (as_capture_cells_budget): with a bound of 0 ms each read pass adds one
 * tile of rows and answers AS_BLOCK_LATER for the cells of block rows not
 * made yet. On induction.gguf (200 tokens; stored patterns and on demand;
 * causal and a window of 50 keys), for zooms 4, 8, 64, 128 (made from 64's
 * block rows) and a 13 x 37 grid tile, max and mean, the bounded capture's
 * cells are read pass after pass until none is left for later: every
 * answer that is not AS_BLOCK_LATER equals (status and value bit for bit)
 * what an unbounded capture of the same run answers, a cell left for
 * later is one the unbounded capture has a value for (never a masked or
 * pending one), and the work was spread over several passes; the
 * unbounded cells equal as_capture_attn_block's direct block over the
 * rows (max exactly; the mean's double sum 1e-6 on weights in [0, 1]).
 * The share of the late cells' block rows made (the progress) lies in
 * [0, late), and is above 0 once a 64-query block row is one tile in.
 * The unbounded capture reads on one thread, the bounded one with its
 * on-demand tiles split over two (the same bits). */
Test(attention, bounded_zoom_cells_equal_the_unbounded_ones)
{
    static const int zooms[][3] = {{4, 0, 0}, {8, 0, 0}, {64, 0, 0}, {128, 0, 0}, {0, 13, 37}};
    setup kinds[] = {{AS_MASK_CAUSAL, 0, 0, ALL}, {AS_MASK_WINDOW, 50, 0, ALL}};
    enum { N = 200 };
    for (int od = 0; od < 2; od++)
        for (size_t kd = 0; kd < sizeof kinds / sizeof kinds[0]; kd++) {
            run ref, bnd;
            open_run(&ref, "../models/induction.gguf", &kinds[kd]);
            open_run(&bnd, "../models/induction.gguf", &kinds[kd]);
            run *both[2] = {&ref, &bnd};
            for (int w = 0; w < 2; w++) {
                as_error err = {{0}};
                cr_assert(as_set_patterns(od ? "on-demand" : "stored"));
                int32_t ids[N];
                for (int i = 0; i < N; i++)
                    ids[i] = (int32_t)((i * 37 + 11) % both[w]->m->cfg.n_vocab);
                cr_assert_eq(as_interp_set_tokens(both[w]->it, ids, N, &err), AS_OK, "%s", err.msg);
                finish(both[w]);
            }
            cr_assert(as_set_patterns("auto"));
            cr_assert_eq(as_capture_patterns_on_demand(bnd.cap), od == 1);
            const as_attn *a = &bnd.p->attn[1];
            int hook = a->pattern, filled = bnd.cap->filled[hook];
            cr_assert_eq(filled, N);
            for (size_t z = 0; z < sizeof zooms / sizeof zooms[0]; z++)
                for (int mean = 0; mean < 2; mean++) {
                    int zoom = zooms[z][0], vq = zooms[z][1], vk = zooms[z][2], head = (int)(zoom == 128 ? z : z + 1) % a->n_head; /* 128: 64's */
                    int nbq = zoom ? (N + zoom - 1) / zoom : vq, nbk = zoom ? (N + zoom - 1) / zoom : vk;
                    static int st_ref[N][N], got[N][N];
                    static float v_ref[N][N];
                    int was = as_get_threads();
                    as_set_threads(1); /* the unbounded cells on one thread, the bounded ones' tiles split over two */
                    for (int i = 0; i < nbq; i++)
                        for (int j = 0; j < nbk; j++) {
                            float v = 0;
                            st_ref[i][j] = as_capture_attn_cells(ref.cap, hook, head, filled, N, N, zoom, vq, vk, i, j,
                                                                 mean, &v);
                            v_ref[i][j] = v;
                            got[i][j] = -1;
                            /* the direct block, rows read one by one */
                            int q0 = zoom ? i * zoom : (int)((long)i * N / vq), q1 = zoom ? (i + 1) * zoom : (int)((long)(i + 1) * N / vq);
                            int k0 = zoom ? j * zoom : (int)((long)j * N / vk), k1 = zoom ? (j + 1) * zoom : (int)((long)(j + 1) * N / vk);
                            float d = 0;
                            int sd = as_capture_attn_block(ref.cap, hook, head, filled, q0, q1 < N ? q1 : N, k0,
                                                           k1 < N ? k1 : N, mean, &d);
                            cr_assert_eq(sd, st_ref[i][j], "zoom %d cell %d,%d: status %d, direct %d", zoom, i, j,
                                         st_ref[i][j], sd);
                            if (sd == AS_BLOCK_VALUE && !mean)
                                cr_assert(d == v, "zoom %d cell %d,%d: max %.9g, direct %.9g", zoom, i, j, v, d);
                            else if (sd == AS_BLOCK_VALUE)
                                cr_assert_float_eq(v, d, 1e-6, "zoom %d cell %d,%d: mean %.9g, direct %.9g", zoom, i,
                                                   j, v, d);
                        }
                    int passes = 0, left;
                    double partly = 0; /* the most of a pass's late cells' block rows made */
                    as_set_threads(2);
                    do {
                        left = 0;
                        as_capture_cells_budget(bnd.cap, 0);
                        for (int i = 0; i < nbq; i++)
                            for (int j = 0; j < nbk; j++) {
                                float v = -1;
                                int st = as_capture_attn_cells(bnd.cap, hook, head, filled, N, N, zoom, vq, vk, i, j,
                                                               mean, &v);
                                if (st == AS_BLOCK_LATER) {
                                    cr_assert_eq(st_ref[i][j], AS_BLOCK_VALUE,
                                                 "zoom %d cell %d,%d: left for later, yet it has no value", zoom, i, j);
                                    cr_assert_eq(got[i][j], -1, "zoom %d cell %d,%d: answered, then left for later",
                                                 zoom, i, j);
                                    left++;
                                    continue;
                                }
                                cr_assert_eq(st, st_ref[i][j], "zoom %d mean %d cell %d,%d: status %d, unbounded %d",
                                             zoom, mean, i, j, st, st_ref[i][j]);
                                if (st == AS_BLOCK_VALUE)
                                    cr_assert(!memcmp(&v, &v_ref[i][j], sizeof v),
                                              "zoom %d mean %d cell %d,%d: %.9g, unbounded %.9g", zoom, mean, i, j,
                                              v, v_ref[i][j]);
                                got[i][j] = st;
                            }
                        cr_assert_eq(as_capture_cells_late(bnd.cap), left);
                        double made = as_capture_cells_late_made(bnd.cap);
                        cr_assert(made >= 0 && made < left + (left == 0), "zoom %d: %g made of %d late cells", zoom,
                                  made, left);
                        partly = made > partly ? made : partly;
                        passes++;
                    } while (left && passes < 10000);
                    as_capture_cells_budget(bnd.cap, -1);
                    as_set_threads(was);
                    cr_assert_eq(left, 0, "zoom %d: cells still left after %d passes", zoom, passes);
                    /* zoom 128 follows 64 on the same head (its block rows kept), the mean follows the max (the
                     * same block rows): whole at once; else the rows come a tile (32 queries) or a block row a
                     * pass */
                    bool at_once = zoom == 128 || mean == 1;
                    if (at_once)
                        cr_assert_eq(passes, 1, "zoom %d mean %d: %d passes", zoom, mean, passes);
                    else
                        cr_assert_gt(passes, 3, "zoom %d: the bound spread nothing (%d passes)", zoom, passes);
                    /* zoom 64's block rows are two tiles: after the first, the late cells of its row are half made */
                    if (zoom == 64 && mean == 0)
                        cr_assert_gt(partly, 0, "zoom 64: no block row partly made counted");
                }
            close_run(&ref);
            close_run(&bnd);
        }
}
