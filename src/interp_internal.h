/* What the interpreter's files (interp.c, interp_ops.c, interp_rules.c,
 * attention.c) share: where the current span's rows of a hook live, and
 * what the loop calls. Not part of the public API. */
#ifndef ATTNSCOPE_INTERP_INTERNAL_H
#define ATTNSCOPE_INTERP_INTERNAL_H

#include "attnscope/interp.h"

/* The span of the stream a hook belongs to. */
static inline const as_stream_state *span_of(const as_interp *it, int h)
{
    return &it->st[it->prog->hooks[h].stream];
}

/* Span row i of hook h (its capture storage or its working buffer). */
static inline float *span_row(const as_interp *it, int h, int i)
{
    return it->span[h] + (size_t)i * (size_t)it->prog->hooks[h].width;
}

/* Keys a site's query rows see in this pass: every position of its
 * key/value stream so far. */
static inline int attn_keys(const as_interp *it, const as_attn *a)
{
    const as_stream_state *kv = &it->st[a->kv_stream];
    return kv->p0 + kv->n;
}

/* Keys stored in span row i of a site's rows: a causal (or windowed)
 * row holds keys 0..its position, any other row every key. */
static inline int attn_row_len(const as_interp *it, const as_attn *a, int i)
{
    return a->mask == AS_MASK_NONE ? attn_keys(it, a) : it->st[a->q_stream].p0 + i + 1;
}

/* Span row i, head `head` of an attention hook: attn_row_len floats. */
float *as_interp_attn_row(const as_interp *it, int h, int head, int i);

/* interp_ops.c: runs one op over the current span. */
void as_interp_exec(as_interp *it, const as_op *op);
/* A linear op's span rows are computed in blocks of at most
 * AS_LINEAR_BLOCK_BYTES of output (a prompt's logits: 8,192 positions of a
 * 32,000-token vocabulary are 1 GB), rows [r0, r1) at a time.
 * AS_TEST_LINEAR_BLOCK=ROWS in the environment sets the block: for the
 * tests only, whose fixtures' outputs are far below the bound. */
#define AS_LINEAR_BLOCK_BYTES ((size_t)64 << 20)
int as_interp_linear_block(const as_op *op);
void as_interp_linear_rows(as_interp *it, const as_op *op, int r0, int r1);
/* The expert a slot's stored index names (-1: none), and the choice of k
 * experts from a route's weights (interp_ops.c; the route-off rule chooses
 * again with them). */
int as_interp_expert_of(float v, int n_expert);
void as_interp_choose_experts(const as_op *op, const float *w, const bool *off, float *out);

/* interp_rules.c: the rules and checks run as an op fills its hook. */
void as_interp_check_finite(as_interp *it, const as_op *op);
void as_interp_check_finite_rows(as_interp *it, const as_op *op, int i0, int i1); /* span rows [i0, i1) */
bool as_interp_has_rules(const as_interp *it, int hook);
bool as_interp_apply_rules(as_interp *it, int hook);
bool as_interp_has_state(const as_interp *it);

/* attention.c: the three ops of an attention site, and the attention rows
 * of the span (as_interp_attn_row above). */
void as_attn_scores(as_interp *it, const as_op *op);
void as_attn_softmax(as_interp *it, const as_op *op);
void as_attn_mix(as_interp *it, const as_op *op);
/* Floats of working memory the site's span work needs per pool task. */
size_t as_attn_tmp_floats(const as_interp *it, const as_attn *a);
/* Decides which sites this pass fuses (it->fused; interp.h's
 * AS_ATTN_WORK_BYTES); called as a pass is entered. */
void as_attn_plan(as_interp *it);

#endif
