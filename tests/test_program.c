/* The program builder (src/program.c) on its own: what architecture files
 * rely on when they add hooks and ops. Run under AddressSanitizer (make
 * asan), a read through a pointer the builder kept across a growth of its
 * arrays is a failure here. */
#include <criterion/criterion.h>
#include <stdlib.h>

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
