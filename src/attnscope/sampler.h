/* sampler: picks the next token from logits. Greedy at temperature 0,
 * otherwise temperature, then top-k, then top-p (nucleus), drawn with the
 * sampler's own seeded generator: the same seed gives the same tokens. */
#ifndef ATTNSCOPE_SAMPLER_H
#define ATTNSCOPE_SAMPLER_H

#include <stdint.h>

#include "attnscope/engine.h"
#include "attnscope/error.h"

typedef struct as_sampler {
    float temp;   /* 0: greedy */
    int top_k;    /* 0: off */
    float top_p;  /* 1: off */
    uint64_t seed;
    uint64_t state;
} as_sampler;

void as_sampler_init(as_sampler *s);
void as_sampler_seed(as_sampler *s, uint64_t seed);
/* Chooses a token from n logits; probs and order are n-element scratch.
 * NaN logits are never chosen; all-NaN logits are an error. */
int as_sampler_pick(as_sampler *s, const float *logits, int n, float *probs, int *order, int32_t *out,
                    as_error *err);
/* Softmax probabilities (as_probs, as_probs_temp) and the k largest
 * (as_top_indices): engine.h. */

uint64_t as_rng_next(uint64_t *state);

#endif
