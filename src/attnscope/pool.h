/* pool: a small pool of worker threads for the work one generated token
 * needs (matrix-vector products, attention over the KV cache), where each
 * job lasts microseconds and waking sleeping threads would cost more than
 * the job. Workers spin briefly after a job, then sleep; the caller's
 * thread always takes part, and does all the work if no worker turns up. Matrix-matrix work goes to OpenBLAS instead,
 * whose own threads are sized by the same setting (as_set_threads). */
#ifndef ATTNSCOPE_POOL_H
#define ATTNSCOPE_POOL_H

#include "attnscope/error.h"

typedef struct as_pool as_pool;

/* One task of a job: tasks are claimed one at a time by whichever thread
 * is free, so a thread the scheduler pauses holds up at most one task.
 * A task's result must not depend on which thread runs it. */
typedef void (*as_pool_fn)(void *ctx, int task);

/* A pool of n threads in all (n - 1 workers); n >= 1. */
int as_pool_new(as_pool **out, int n, as_error *err);
void as_pool_free(as_pool *p);
int as_pool_size(const as_pool *p); /* 1 for a NULL pool */
/* Runs fn(ctx, t) for t in [0, n_tasks) and returns when all are done. A
 * NULL pool or a pool of one runs them in order on the caller. Not
 * re-entrant: one job at a time per pool. */
void as_pool_run(as_pool *p, as_pool_fn fn, void *ctx, int n_tasks);

#endif
