/* backward: gradients over the program's op list (instruments_grad.c).
 * From a gradient on one hook (the seed: d metric / d logits), each op
 * from the last to the first passes its output's gradient to its inputs
 * by its vector-Jacobian product, reading the forward values the capture
 * holds (the caller recomputes a pass when they were dropped:
 * as_backward_captured). Values are float32, long sums accumulate in float64. An op kind
 * without a VJP (or a forward value the capture budget dropped) on the
 * path makes the whole pass refuse, naming it: never a wrong number. */
#ifndef ATTNSCOPE_BACKWARD_H
#define ATTNSCOPE_BACKWARD_H

#include <stdbool.h>

#include "attnscope/error.h"
#include "attnscope/interp.h"
#include "attnscope/program.h"

typedef struct as_grads {
    const as_program *prog;
    int n_pos[AS_MAX_STREAMS]; /* positions of each stream the pass covered */
    /* Per hook: NULL when no gradient reaches it, else d metric / d hook,
     * [n_pos][width], attention hooks dense [head][n_q][n_k] (zero where a
     * key is hidden). */
    float **g;
} as_grads;

/* The hook's gradient floats (its dense shape's product). */
size_t as_grads_count(const as_grads *g, int hook);
/* Does every op between `seed` and the inputs have a VJP, and does the
 * capture hold what they read? AS_ERR says which op kind or hook is
 * missing, for which model. */
int as_backward_check(const as_interp *it, int seed, as_error *err);
/* Whether the capture holds every forward value the pass from seed reads
 * (false: a run with a larger budget can recompute them). */
bool as_backward_captured(const as_interp *it, int seed);
/* Runs the backward pass from seed_grad (as_grads_count(seed) floats, the
 * hook's dense layout) over the computed state (complete, fresh). The
 * interventions in effect stop the gradient where they set values. */
int as_backward(const as_interp *it, int seed, const float *seed_grad, as_grads *out, as_error *err);
void as_grads_free(as_grads *g);

#endif
