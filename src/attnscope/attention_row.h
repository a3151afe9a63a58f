/* attention_row: one query row of an attention site's scores, the one
 * arithmetic the forward pass (attention.c) and the patterns computed on
 * demand (capture.c) both run, so a pattern recomputed from the captured q
 * and k equals the one the forward pass computed, bit for bit. */
#ifndef ATTNSCOPE_ATTENTION_ROW_H
#define ATTNSCOPE_ATTENTION_ROW_H

#include <stddef.h>

#include "attnscope/program.h"

/* Query position qpos's scores over keys [0, len) for one head: out[t] =
 * q · k_t * scale with k_t = k + t * k_stride (the head's slice of key t),
 * then as_attn_finish_scores. q: the head's d_qk floats. bias: the head's
 * bias row for this query (a->bias >= 0), else NULL. */
void as_attn_score_row(const as_attn *a, const float *q, const float *k, size_t k_stride, int qpos, int len,
                       const float *bias, float *out);
/* What follows the dot products on a row: the soft-cap, the bias, a
 * window's hidden keys set to -inf. */
void as_attn_finish_scores(const as_attn *a, int qpos, const float *bias, float *row, int len);
/* Whether a row needs as_attn_finish_scores at all. */
bool as_attn_row_plain(const as_attn *a);

#endif
