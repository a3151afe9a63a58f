/* What the interpreter's files (interp.c, attention.c) share: where the
 * current span's rows of a hook live. Not part of the public API. */
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

/* attention.c: the three ops of an attention site. */
void as_attn_scores(as_interp *it, const as_op *op);
void as_attn_softmax(as_interp *it, const as_op *op);
void as_attn_mix(as_interp *it, const as_op *op);
/* Floats of working memory the site's span work needs per pool task. */
size_t as_attn_tmp_floats(const as_interp *it, const as_attn *a);

#endif
