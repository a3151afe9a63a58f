/* `weight` on every stored type attnscope decodes: a tensor quantized by ggml's own quantizer (tests/ggml_ref.h)
 * and added to a copy of tiny-llama.gguf comes out of `weight T FILE.npy`
 * equal bit for bit to ggml's own decoder, in gguf-py's shape (ne
 * reversed). The e2e script tests/e2e/circuits.sh holds F32 tensors,
 * `circuit` and `steer` to NumPy. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/gguf.h"
#include "attnscope/quant.h"
#include "ggml_ref.h"
#include "helpers.h"

static void ggml_or_skip(const char *test)
{
    char why[512];
    int rc = ggml_ref_open(why, sizeof why);
    if (rc == GGML_REF_MISSING) {
        fprintf(stderr, "\n**** SKIP circuit::%s: NOT CHECKED AGAINST GGML: %s ****\n\n", test, why);
        cr_skip_test("not checked against ggml: %s", why);
    }
    cr_assert_eq(rc, GGML_REF_OK, "%s", why);
}

/* tiny-llama.gguf plus "extra.weight" ([rows][cols] floats) stored as type t. */
static void write_with_extra(const char *dst, as_ggml_type t, const void *data, uint64_t cols, uint64_t rows)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, "fixtures/tiny-llama.gguf", &err), AS_OK, "%s", err.msg);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *x = &g->tensors[i];
        cr_assert_eq(as_gguf_writer_add_tensor(w, x->name, x->type, x->n_dims, x->ne, x->data, &err), AS_OK);
    }
    uint64_t ne[4] = {cols, rows, 1, 1};
    cr_assert_eq(as_gguf_writer_add_tensor(w, "extra.weight", t, 2, ne, data, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_gguf_writer_write(w, dst, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);
}

Test(circuit, weight_dequantizes_every_type_as_ggml)
{
    ggml_or_skip("weight_dequantizes_every_type_as_ggml");
    enum { COLS = 512, ROWS = 3, N = COLS * ROWS };
    float *src = rand_vector(N, 2.0f, 34), *ref = malloc(N * sizeof *ref);
    char done[512] = "", path[128], npy_path[128], cmd[256];
    snprintf(path, sizeof path, "/tmp/attnscope-weight-%d.gguf", (int)getpid());
    snprintf(npy_path, sizeof npy_path, "/tmp/attnscope-weight-%d.npy", (int)getpid());
    int checked = 0;
    bool f16 = false, q8 = false, q4k = false;
    for (int t = 0; t < AS_GGML_TYPE_END; t++) {
        ggml_ref_type gt = ggml_ref_type_of(t);
        const as_ggml_traits *tr = as_ggml_traits_of((as_ggml_type)t);
        if (!gt.name || !tr || !tr->to_f32 || COLS % gt.block_elems)
            continue;
        uint8_t *q = malloc(as_ggml_nbytes((as_ggml_type)t, N));
        if (!gt.can_decode) { /* F32: ggml has no decoder; its bytes are the values */
            cr_assert_eq(t, AS_GGML_F32, "ggml cannot decode %s", tr->name);
            memcpy(q, src, N * sizeof *src);
            memcpy(ref, src, N * sizeof *src);
        } else {
            cr_assert_eq(ggml_ref_quantize(t, src, q, ROWS, COLS), as_ggml_nbytes((as_ggml_type)t, N), "%s", tr->name);
            ggml_ref_decode(t, q, ref, N);
        }
        write_with_extra(path, (as_ggml_type)t, q, COLS, ROWS);
        as_session *s = open_session(path, 64);
        snprintf(cmd, sizeof cmd, "weight extra.weight %s", npy_path);
        run_ok(s, cmd);
        char *out = run_output(s, "weight extra.weight");
        cr_assert(strstr(out, "shape\t(3, 512)"), "%s: %s", tr->name, out);
        cr_assert(strstr(out, tr->name), "%s: the type is not named: %s", tr->name, out);
        free(out);
        close_session(s);
        npy a;
        cr_assert_eq(npy_read(npy_path, &a), 0);
        cr_assert_eq(a.ndim, 2);
        cr_assert(a.shape[0] == ROWS && a.shape[1] == COLS, "%s: shape [%zu, %zu]", tr->name, a.shape[0], a.shape[1]);
        for (int i = 0; i < N; i++)
            cr_assert(!memcmp(&a.f[i], &ref[i], sizeof(float)), "%s: value %d is %.9g, ggml's %.9g", tr->name, i,
                      a.f[i], ref[i]);
        npy_free(&a);
        free(q);
        f16 |= t == AS_GGML_F16, q8 |= t == AS_GGML_Q8_0, q4k |= t == AS_GGML_Q4_K;
        checked++;
        snprintf(done + strlen(done), sizeof done - strlen(done), " %s", tr->name);
    }
    unlink(path);
    unlink(npy_path);
    cr_assert(f16 && q8 && q4k, "F16, Q8_0 and Q4_K must be among the types checked:%s", done);
    fprintf(stderr, "circuit: `weight` equals ggml's decoder bit for bit on %d types:%s\n", checked, done);
    free(src);
    free(ref);
}

/* The logit lens figure's table (as_cmd_lens_grid: the top token and its
 * probability per layer and position) agrees with `lens POS`, which ranks
 * through as_probs on its own path: the same top token, its probability
 * within the 4 printed decimals. */
Test(circuit, lens_grid_matches_lens_at_each_position)
{
    as_session *s = open_session("../models/austen-gpt2.gguf", 64);
    run_ok(s, "prompt It is a truth universally acknowledged; finish");
    int32_t *ids;
    float *probs;
    int R, n;
    as_error err = {{0}};
    cr_assert_eq(as_cmd_lens_grid(s, &ids, &probs, &R, &n, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(R, s->model->cfg.n_layer + 1);
    cr_assert_eq(n, s->it->out->n_tokens);
    for (int p = 0; p < n; p++) {
        char cmd[32];
        snprintf(cmd, sizeof cmd, "lens %d", p);
        char *out = run_output(s, cmd), *line = strstr(out, "\nembed\t");
        cr_assert_not_null(line, "%s", out);
        for (int r = 0; r < R; r++) {
            line++;
            char piece[64], want[64];
            float pr;
            cr_assert_eq(sscanf(strchr(line, '\t') + 1, "%63[^\t]\t%f", piece, &pr), 2, "%s", line);
            as_cmd_label(s, ids[(size_t)r * (size_t)n + (size_t)p], 0, want, sizeof want);
            cr_assert_str_eq(piece, want, "layer row %d, position %d", r, p);
            cr_assert(fabsf(pr - probs[(size_t)r * (size_t)n + (size_t)p]) <= 5e-5f, "layer row %d, position %d: %g vs %g",
                      r, p, pr, probs[(size_t)r * (size_t)n + (size_t)p]);
            line = strchr(line, '\n');
            cr_assert_not_null(line);
        }
        free(out);
    }
    free(ids);
    free(probs);
    close_session(s);
}
