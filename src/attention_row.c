/* attention_row: one query row of an attention site's scores (see
 * attention_row.h): the forward pass and the patterns computed on demand
 * call these, and nothing else computes a score. */
#include "attnscope/attention_row.h"

#include <math.h>

#include "attnscope/kernels.h"

bool as_attn_row_plain(const as_attn *a)
{
    return a->softcap <= 0 && a->bias < 0 && a->mask != AS_MASK_WINDOW;
}

void as_attn_finish_scores(const as_attn *a, int qpos, const float *bias, float *row, int len)
{
    if (a->softcap > 0)
        for (int k = 0; k < len; k++)
            row[k] = a->softcap * tanhf(row[k] / a->softcap);
    if (a->bias >= 0 && bias)
        for (int k = 0; k < len; k++)
            row[k] += bias[k];
    if (a->mask == AS_MASK_WINDOW)
        for (int k = 0; k < len && k <= qpos - a->window; k++)
            row[k] = -INFINITY;
}

void as_attn_score_row(const as_attn *a, const float *q, const float *k, size_t k_stride, int qpos, int len,
                       const float *bias, float *out)
{
    for (int t = 0; t < len; t++)
        out[t] = as_dot(k + (size_t)t * k_stride, q, a->d_qk) * a->scale;
    if (!as_attn_row_plain(a))
        as_attn_finish_scores(a, qpos, bias, out, len);
}
