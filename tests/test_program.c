/* The program builder (src/program.c) on its own: what architecture files
 * rely on when they add hooks and ops. Run under AddressSanitizer (make
 * asan), a read through a pointer the builder kept across a growth of its
 * arrays is a failure here. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "../src/program_build.h" /* the builder, private to the engine */

/* A program with one stream and its hook array filled to capacity, the
 * last hook being [4 heads, 16] (q, the rotary op's input). */
static as_program *full_program(int *in)
{
    as_program *p = calloc(1, sizeof *p);
    cr_assert_not_null(p);
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, 8, true);
    as_program_scope(p, 0);
    do
        *in = as_program_add_hook(p, AS_HK_Q, 0, AS_CLASS_RESID, 2, 4, 16);
    while (p->n_hooks < p->cap_hooks);
    cr_assert(!p->failed);
    return p;
}

/* as_program_add_rope kept a pointer to its input hook across adding the
 * rotated hook, which may move the array (a use-after-free ASan caught). */
Test(program, add_rope_reads_its_input_before_the_hook_array_moves)
{
    int in;
    as_program *p = full_program(&in);
    int cap = p->cap_hooks;
    as_rope_spec rope = {.dim = 16, .base = 10000, .freq_scale = 1, .attn_factor = 1};
    int h = as_program_add_rope(p, AS_HK_ROT_Q, 0, AS_CLASS_RESID, in, &rope, "rot q");
    cr_assert_gt(p->cap_hooks, cap, "the hook array grew at the rotary hook");
    cr_assert(!p->failed);
    cr_assert_eq(p->hooks[h].n_dims, 2);
    cr_assert_eq(p->hooks[h].dims[0], 4);
    cr_assert_eq(p->hooks[h].dims[1], 16);
    as_program_free(p);

    /* the builder's check of the rotated width uses the input's, read before the growth too */
    p = full_program(&in);
    rope.dim = 18;
    as_program_add_rope(p, AS_HK_ROT_Q, 0, AS_CLASS_RESID, in, &rope, "rot q");
    cr_assert(p->failed, "a rotation wider than the head is a builder's mistake");
    as_program_free(p);
}

/* Every hook and op added across several growths keeps its facts. */
Test(program, hooks_and_ops_survive_the_arrays_growing)
{
    as_program *p = calloc(1, sizeof *p);
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, 8, true);
    as_program_scope(p, 1);
    for (int i = 0; i < 300; i++) {
        int h = as_program_add_hook(p, AS_HK_RESID_PRE, 1, AS_CLASS_RESID, 1, i + 1, 0);
        as_program_add_op(p, AS_OP_ADD, 1, h, h, h, "x");
    }
    cr_assert(!p->failed);
    cr_assert_eq(p->n_hooks, 300);
    cr_assert_eq(p->n_ops, 300);
    for (int i = 0; i < 300; i++) {
        cr_assert_eq(p->hooks[i].width, i + 1);
        cr_assert_eq(p->ops[i].out, i);
    }
    cr_assert_str_eq(p->hooks[299].name, "blocks.1.hook_resid_pre");
    as_program_free(p);
}

/* ---- as_program_validate: what as_program_build checks after every architecture's build ---- */

/* An empty program of one causal stream, its scope block 0. */
static as_program *empty_program(void)
{
    as_program *p = calloc(1, sizeof *p);
    cr_assert_not_null(p);
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, 8, true);
    as_program_scope(p, 0);
    return p;
}

static void assert_refused(const as_program *p, const char *const *parts, int n)
{
    as_error err = {{0}};
    cr_assert_eq(as_program_validate(p, &err), AS_ERR, "the program was accepted");
    for (int i = 0; i < n; i++)
        cr_assert_not_null(strstr(err.msg, parts[i]), "\"%s\" is not in: %s", parts[i], err.msg);
}

Test(program, validate_refuses_an_op_reading_a_hook_filled_later)
{
    as_program *p = empty_program();
    int x = as_program_add_hook(p, AS_HK_RESID_PRE, 0, AS_CLASS_RESID, 1, 8, 0);
    int y = as_program_add_hook(p, AS_HK_RESID_MID, 0, AS_CLASS_RESID, 1, 8, 0);
    as_program_add_op(p, AS_OP_COPY, 0, x, y, -1, "resid_pre = resid_mid"); /* reads y, filled next */
    as_program_add_op(p, AS_OP_COPY, 0, y, -1, -1, "resid_mid = nothing");
    const char *parts[] = {"op 0 (copy \"resid_pre = resid_mid\")", "blocks.0.hook_resid_mid [8]", "before any op fills it"};
    assert_refused(p, parts, 3);
    as_program_free(p);
}

Test(program, validate_refuses_a_width_mismatch)
{
    as_program *p = empty_program();
    int a = as_program_add_hook(p, AS_HK_RESID_PRE, 0, AS_CLASS_RESID, 1, 8, 0);
    as_program_add_op(p, AS_OP_COPY, 0, a, -1, -1, "resid_pre");
    int b = as_program_add_hook(p, AS_HK_ATTN_OUT, 0, AS_CLASS_RESID, 2, 2, 3);
    as_program_add_op(p, AS_OP_COPY, 0, b, -1, -1, "attn_out");
    int s = as_program_add_hook(p, AS_HK_RESID_MID, 0, AS_CLASS_RESID, 1, 8, 0);
    as_program_add_op(p, AS_OP_ADD, 0, s, a, b, "resid_mid = resid_pre + attn_out");
    const char *parts[] = {"op 2 (add \"resid_mid = resid_pre + attn_out\")", "blocks.0.hook_attn_out [2, 3]",
                           "has 6 values a position where its output takes 8"};
    assert_refused(p, parts, 3);
    as_program_free(p);
}

Test(program, validate_refuses_two_producers_of_a_hook)
{
    as_program *p = empty_program();
    int a = as_program_add_hook(p, AS_HK_RESID_PRE, 0, AS_CLASS_RESID, 1, 8, 0);
    as_program_add_op(p, AS_OP_COPY, 0, a, -1, -1, "first");
    int b = as_program_add_hook(p, AS_HK_RESID_MID, 0, AS_CLASS_RESID, 1, 8, 0);
    as_program_add_op(p, AS_OP_COPY, 0, b, a, -1, "resid_mid = resid_pre");
    as_program_add_op(p, AS_OP_COPY, 0, a, b, -1, "second");
    const char *parts[] = {"op 2 (copy \"second\")", "blocks.0.hook_resid_pre [8]", "which op 0 (copy \"first\") fills already"};
    assert_refused(p, parts, 3);
    as_program_free(p);
}

/* A linear map whose matrix does not give the hook's width: the build's
 * message names the op and both shapes. */
Test(program, a_builder_mistake_names_the_op_and_the_shapes)
{
    as_program *p = empty_program();
    int a = as_program_add_hook(p, AS_HK_LN1_NORMALIZED, 0, AS_CLASS_RESID, 1, 8, 0);
    as_program_add_op(p, AS_OP_COPY, 0, a, -1, -1, "ln1");
    float w[8 * 12] = {0};
    as_weight W = as_weight_f32(w, 12, 8);
    as_program_add_linear(p, AS_HK_Q, 0, AS_CLASS_HEADS, a, &W, NULL, 2, 2, 4, "q = ln1 · W_Q");
    cr_assert(p->failed);
    cr_assert_not_null(strstr(p->mistake, "linear \"q = ln1 · W_Q\""), "%s", p->mistake);
    cr_assert_not_null(strstr(p->mistake, "blocks.0.attn.hook_q [2, 4] (8 values) from a matrix of 12 rows x 8 columns"),
                       "%s", p->mistake);
    as_program_free(p);
}

/* Every fixture and shipped model's program validates (as_program_build
 * checks it too; here the check is called on its own, on each). */
Test(program, every_fixture_models_program_validates)
{
    const char *patterns[] = {"fixtures/*.gguf", "fixtures/models/*.gguf", "../models/*.gguf", "fixtures/hf/*/config.json"};
    int n = 0;
    for (size_t g = 0; g < sizeof patterns / sizeof patterns[0]; g++) {
        glob_t gl;
        if (glob(patterns[g], 0, NULL, &gl))
            continue;
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            char path[512];
            snprintf(path, sizeof path, "%s", gl.gl_pathv[i]);
            char *cfg = strstr(path, "/config.json");
            if (cfg)
                *cfg = '\0'; /* a Hugging Face directory */
            as_error err = {{0}};
            as_model *m = NULL;
            as_program *p = NULL;
            if (as_model_load(&m, path, &err))
                continue; /* a fixture of a refused file, which other tests check */
            cr_assert_eq(as_program_build(&p, m, &err), AS_OK, "%s: %s", path, err.msg);
            cr_assert_eq(as_program_validate(p, &err), AS_OK, "%s: %s", path, err.msg);
            /* with the optional hooks: valid too; each hook_result follows from its layer's
             * hook_z, holds [heads, d_model] and is summed into the hook the plain program's
             * output projection filled; hook_attn_in / hook_mlp_in are copies */
            as_program *q = NULL;
            cr_assert_eq(as_program_build_opts(&q, m, AS_PROG_ATTN_RESULT | AS_PROG_IN_HOOKS, &err), AS_OK, "%s: %s",
                         path, err.msg);
            cr_assert_eq(as_program_validate(q, &err), AS_OK, "%s: %s", path, err.msg);
            int n_result = 0, n_z = 0;
            for (int o = 0; o < q->n_ops; o++) {
                const as_op *op = &q->ops[o];
                if (op->kind == AS_OP_LINEAR && q->hooks[op->in[0]].kind == AS_HK_Z)
                    n_z++; /* an output projection left as it was: only where z is not [heads, d] */
                if (op->kind != AS_OP_HEAD_OUT)
                    continue;
                const as_hook *z = &q->hooks[op->in[0]], *r = &q->hooks[op->out];
                cr_assert_eq(z->kind, AS_HK_Z, "%s: %s", path, r->name);
                cr_assert(r->n_dims == 2 && r->dims[0] == z->dims[0] && r->dims[1] == op->w.rows, "%s: %s", path, r->name);
                cr_assert(o + 1 < q->n_ops && q->ops[o + 1].kind == AS_OP_HEAD_SUM && q->ops[o + 1].in[0] == op->out,
                          "%s: %s is not summed next", path, r->name);
                cr_assert_not_null(strstr(r->name, "attn.hook_result"), "%s: %s", path, r->name);
                n_result++;
            }
            cr_assert_eq(n_z, 0, "%s: %d output projections without hook_result", path, n_z);
            cr_assert_eq(n_result, q->n_attn, "%s: one hook_result per attention site", path);
            for (int h = 0; h < q->n_hooks; h++)
                if (q->hooks[h].kind == AS_HK_ATTN_IN || q->hooks[h].kind == AS_HK_MLP_IN) {
                    const as_op *c = as_program_producer(q, h);
                    cr_assert(c && c->kind == AS_OP_COPY, "%s: %s", path, q->hooks[h].name);
                    cr_assert_eq(q->hooks[c->in[0]].kind,
                                 q->hooks[h].kind == AS_HK_ATTN_IN ? AS_HK_RESID_PRE : AS_HK_RESID_MID, "%s: %s", path,
                                 q->hooks[h].name);
                }
            as_program_free(q);
            as_program_free(p);
            as_model_free(m);
            n++;
        }
        globfree(&gl);
    }
    cr_assert_geq(n, 40, "only %d models found: run from tests/", n);
}
