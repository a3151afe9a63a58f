/* The backward pass against its forward (bench --only grad; issue #34's
 * target: a backward pass costs at most 3x its forward) at stories110M's
 * shape: the 256-token prompt's pass with every hook captured (what the
 * backward pass reads), then the backward pass of a logit difference at
 * the last position from the logits to the embeddings (every hook's
 * gradient), in turn, run after run; the figure is the median of the
 * per-run ratios. In process: no peak RSS is measured here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/backward.h"
#include "attnscope/kernels.h"
#include "attnscope/session.h"
#include "../../src/session_internal.h" /* the session's interpreter, which the backward pass reads */
#include "bench.h"

#define GRAD_RUNS_MAX 15

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_grad(FILE *f, const char *gguf, int threads, int runs, double *ratio)
{
    as_model *m;
    as_session *s;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    int32_t ids[BENCH_PROMPT];
    char text[BENCH_PROMPT];
    double fwd[GRAD_RUNS_MAX], bwd[GRAD_RUNS_MAX], r[GRAD_RUNS_MAX];
    runs = runs < 1 ? 1 : runs > GRAD_RUNS_MAX ? GRAD_RUNS_MAX : runs;
    as_set_threads(threads);
    if (as_model_load_with(&m, gguf, NULL, &err))
        return fprintf(stderr, "bench grad: %s\n", err.msg), -1;
    if (as_session_from_model(&s, m, (size_t)1 << 20, null ? null : stderr, stderr, &err)) {
        as_model_free(m);
        return fprintf(stderr, "bench grad: %s\n", err.msg), -1;
    }
    bench_llama_prompt(ids, text, sizeof text);
    const as_program *p = s->prog;
    int V = s->model->cfg.n_vocab, n = BENCH_PROMPT, seed = p->unembed >= 0 ? p->ops[p->unembed].out : -1;
    float *sg = calloc((size_t)n * (size_t)V, sizeof *sg);
    int rc = sg && seed >= 0 ? 0 : -1;
    if (rc == 0 && as_interp_set_tokens(s->it, ids, n, &err))
        rc = -1;
    /* the metric: logit[1] - logit[2] at the last position */
    if (sg)
        sg[(size_t)(n - 1) * V + 1] = 1, sg[(size_t)(n - 1) * V + 2] = -1;
    for (int i = 0; rc == 0 && i < runs; i++) {
        as_grads g = {0};
        as_interp_reset(s->it);
        int64_t t0 = bench_now();
        if (as_session_exec(s, "finish", &err))
            rc = -1;
        int64_t t1 = bench_now();
        if (rc == 0 && i == 0 && as_backward_check(s->it, seed, &err))
            rc = -1;
        int64_t t2 = bench_now();
        if (rc == 0 && as_backward(s->it, seed, sg, &g, &err))
            rc = -1;
        int64_t t3 = bench_now();
        as_grads_free(&g);
        fwd[i] = (double)(t1 - t0) * 1e-6, bwd[i] = (double)(t3 - t2) * 1e-6, r[i] = bwd[i] / fwd[i];
    }
    if (rc)
        fprintf(stderr, "bench grad: %s\n", err.msg[0] ? err.msg : "out of memory");
    else {
        *ratio = median(r, runs);
        fprintf(f, "\n### The backward pass (stories110M's shape, %d-token prompt)\n\n"
                   "The forward pass with every hook captured (what the backward pass reads), then the backward "
                   "pass of a logit difference at the last position to every hook, in turn; medians of %d runs.\n\n"
                   "| forward ms | backward ms | backward / forward |\n|---:|---:|---:|\n| %.1f | %.1f | %.2f |\n",
                n, runs, median(fwd, runs), median(bwd, runs), *ratio);
    }
    free(sg);
    as_session_free(s);
    if (null)
        fclose(null);
    return rc;
}
