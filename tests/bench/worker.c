/* attnscope's side of the benchmark, run in a child process of its own so
 * that its peak RSS is attnscope's alone. It drives the session as a user
 * does (`finish`, `gen N`) and timestamps each pass through the session's
 * per-pass callback.
 *
 *   bench --worker MODEL TOKENIZER|- CAPTURE_MB decode|prompt THREADS llama|gpt2
 *
 * prints "key value" lines: prompt_tps, first_ns (CLOCK_MONOTONIC when the
 * first generated token was known), decode_tps, ids (the greedy tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/session.h"
#include "../../src/session_internal.h" /* the session's fields, which the bench reads */
#include "bench.h"

typedef struct pass_times {
    int64_t *t;
    int n, cap;
} pass_times;

static void on_pass(void *ctx, as_session *s)
{
    (void)s;
    pass_times *p = ctx;
    if (p->n < p->cap)
        p->t[p->n++] = bench_now();
}

static int exec(as_session *s, const char *cmd)
{
    as_error err = {{0}};
    if (as_session_exec(s, cmd, &err) == AS_OK)
        return 0;
    fprintf(stderr, "bench worker: %s: %s\n", cmd, err.msg);
    return -1;
}

/* A 256-token prompt as one pass, then the first greedy token. */
static int run_prompt(as_session *s, bool gpt2)
{
    int32_t ids[BENCH_PROMPT], tok;
    char text[BENCH_PROMPT];
    as_error err = {{0}};
    if (gpt2)
        bench_gpt2_prompt(ids);
    else
        bench_llama_prompt(ids, text, sizeof text);
    if (as_interp_set_tokens(s->it, ids, BENCH_PROMPT, &err))
        return fprintf(stderr, "bench worker: %s\n", err.msg), -1;
    int64_t t0 = bench_now();
    if (exec(s, "finish"))
        return -1;
    int64_t t1 = bench_now();
    if (as_sampler_pick(&s->sampler, as_interp_logits(s->it), s->model->cfg.n_vocab, s->probs, s->order,
                        &tok, &err))
        return fprintf(stderr, "bench worker: %s\n", err.msg), -1;
    printf("first_ns %lld\n", (long long)bench_now());
    printf("prompt_tps %.3f\n", BENCH_PROMPT / ((double)(t1 - t0) * 1e-9));
    printf("ids %d\n", tok);
    return 0;
}

/* One start token, then BENCH_GEN greedy tokens, one pass each. */
static int run_decode(as_session *s, bool gpt2)
{
    int32_t start = gpt2 ? bench_gpt2_start() : 1;
    int64_t t[BENCH_GEN + 2];
    pass_times p = {t, 0, BENCH_GEN + 2};
    as_error err = {{0}};
    char cmd[32];
    if (as_interp_set_tokens(s->it, &start, 1, &err))
        return fprintf(stderr, "bench worker: %s\n", err.msg), -1;
    s->on_pass = on_pass;
    s->on_pass_ctx = &p;
    snprintf(cmd, sizeof cmd, "gen %d", BENCH_GEN);
    if (exec(s, cmd))
        return -1;
    if (p.n < 2)
        return fprintf(stderr, "bench worker: only %d passes ran\n", p.n), -1;
    /* As run.c counts: the passes after the first, over the time they took. */
    printf("decode_tps %.3f\n", (p.n - 1) / ((double)(p.t[p.n - 1] - p.t[0]) * 1e-9));
    printf("passes %d\nids", p.n);
    for (int i = 1; i < s->it->out->n_tokens; i++)
        printf(" %d", s->it->out->tokens[i]);
    printf("\n");
    return 0;
}

int bench_worker(int argc, char **argv)
{
    if (argc != 7)
        return fprintf(stderr, "usage: bench --worker MODEL TOKENIZER|- CAPTURE_MB decode|prompt THREADS llama|gpt2\n"), 2;
    const char *model = argv[1], *tok = strcmp(argv[2], "-") ? argv[2] : NULL;
    size_t capture_mb = strtoull(argv[3], NULL, 10);
    bool decode = !strcmp(argv[4], "decode"), gpt2 = !strcmp(argv[6], "gpt2");
    as_set_threads(atoi(argv[5]));
    const char *act = getenv("AS_BENCH_ACTIVATIONS"); /* bench --activations */
    if (act && !as_set_activations(act))
        return fprintf(stderr, "bench worker: AS_BENCH_ACTIVATIONS=%s: native or f32\n", act), 2;
    as_model *m;
    as_session *s;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    if (as_model_load_with(&m, model, tok, &err))
        return fprintf(stderr, "bench worker: %s\n", err.msg), 1;
    if (as_session_from_model(&s, m, capture_mb, null, stderr, &err)) {
        as_model_free(m);
        return fprintf(stderr, "bench worker: %s\n", err.msg), 1;
    }
    int rc = decode ? run_decode(s, gpt2) : run_prompt(s, gpt2);
    fflush(stdout);
    as_session_free(s);
    fclose(null);
    return rc ? 1 : 0;
}
