#include "attnscope/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* How long a worker keeps spinning for the next job before it sleeps. A
 * token's ops come every few microseconds, so a worker spinning through
 * the gaps never pays a wake-up; between tokens and commands it sleeps. */
#define SPIN_NS 200000

/* The job state word: generation, a closed flag, and how many workers are
 * inside the job. Joining and closing both go through it, so a worker that
 * wakes late can never join a job that is over (nor the next one with the
 * previous one's function). */
#define ACTIVE_MASK 0xffffu
#define CLOSED (1u << 16)
#define GEN_SHIFT 17

/* Each thread owns a contiguous range of a job's tasks and claims them
 * front to back, so its reads of the weights form one long stream (tasks
 * taken in turns by both threads ran ~14% slower: every task restarted
 * the hardware prefetcher). A thread with nothing left takes tasks from
 * the back of another's range, so a thread the scheduler pauses, or one
 * that never arrives, delays the job by at most its task in hand.
 * A range is one word: front in the low half, back in the high half. */
#define RANGE(front, back) ((uint64_t)(back) << 32 | (uint32_t)(front))
#define FRONT(r) ((int)(uint32_t)(r))
#define BACK(r) ((int)((r) >> 32))

/* One per cache line: threads claim from their own ranges all the time. */
struct range {
    _Alignas(64) _Atomic uint64_t r;
};

struct as_pool {
    int n;
    pthread_t *threads;
    as_pool_fn fn;
    void *ctx;
    atomic_int joins;      /* workers that joined the current job */
    struct range *range;   /* per thread */
    atomic_uint_fast64_t state;
    atomic_int sleepers;   /* workers waiting on `wake` */
    atomic_bool stop;
    pthread_mutex_t lock;
    pthread_cond_t wake;
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t gen_of(uint64_t s)
{
    return s >> GEN_SHIFT;
}

/* Waits until the generation moves past `seen`: spins, then sleeps. The
 * sleeper count is raised before the state is re-read (both sequentially
 * consistent), so as_pool_run either sees the sleeper or the worker sees
 * the new generation. */
static uint64_t wait_job(as_pool *p, uint64_t seen)
{
    long long until = now_ns() + SPIN_NS;
    for (int k = 0;; k++) {
        uint64_t g = gen_of(atomic_load(&p->state));
        if (g != seen || atomic_load(&p->stop))
            return g;
        if ((k & 255) == 255 && now_ns() > until)
            break;
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->sleepers, 1);
    uint64_t g;
    while ((g = gen_of(atomic_load(&p->state))) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->lock);
    atomic_fetch_sub(&p->sleepers, 1);
    pthread_mutex_unlock(&p->lock);
    return g;
}

/* The next task of range k: from the front for its owner, the back for others; -1 if none. */
static int claim(as_pool *p, int k, bool owner)
{
    uint64_t r = atomic_load_explicit(&p->range[k].r, memory_order_relaxed);
    while (FRONT(r) < BACK(r)) {
        uint64_t next = owner ? RANGE(FRONT(r) + 1, BACK(r)) : RANGE(FRONT(r), BACK(r) - 1);
        if (atomic_compare_exchange_weak_explicit(&p->range[k].r, &r, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return owner ? FRONT(r) : BACK(r) - 1;
    }
    return -1;
}

/* Runs thread me's own range, then whatever is left of the others'. */
static void drain(as_pool *p, int me)
{
    for (int k = 0; k < p->n; k++) {
        int victim = (me + k) % p->n;
        for (int t; (t = claim(p, victim, k == 0)) >= 0;)
            p->fn(p->ctx, t);
    }
}

/* Joins job `g` if it is still open; false if it is over. */
static bool join(as_pool *p, uint64_t g)
{
    uint64_t s = atomic_load(&p->state);
    while (gen_of(s) == g && !(s & CLOSED))
        if (atomic_compare_exchange_weak(&p->state, &s, s + 1))
            return true;
    return false;
}

static void *worker(void *arg)
{
    as_pool *p = arg;
    uint64_t seen = 0;
    for (;;) {
        seen = wait_job(p, seen);
        if (atomic_load(&p->stop))
            return NULL;
        if (!join(p, seen))
            continue;
        drain(p, 1 + atomic_fetch_add_explicit(&p->joins, 1, memory_order_relaxed) % (p->n - 1));
        atomic_fetch_sub_explicit(&p->state, 1, memory_order_release);
    }
}

int as_pool_new(as_pool **out, int n, as_error *err)
{
    *out = NULL;
    as_pool *p = calloc(1, sizeof *p);
    if (!p || n < 1 || !(p->threads = calloc((size_t)n, sizeof *p->threads))) {
        free(p);
        return as_error_set(err, n < 1 ? "a pool needs at least one thread (got %d)" : "out of memory", n);
    }
    p->n = 1;
    if (!(p->range = aligned_alloc(64, (size_t)n * sizeof *p->range))) {
        free(p->threads);
        free(p);
        return as_error_set(err, "out of memory");
    }
    for (int i = 0; i < n; i++)
        atomic_init(&p->range[i].r, RANGE(0, 0)); /* empty until the first job */
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    /* Fewer threads than asked still computes the same results. */
    for (int i = 1; i < n && pthread_create(&p->threads[i], NULL, worker, p) == 0; i++)
        p->n++;
    *out = p;
    return AS_OK;
}

void as_pool_free(as_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    free(p->threads);
    free(p->range);
    free(p);
}

int as_pool_size(const as_pool *p)
{
    return p ? p->n : 1;
}

void as_pool_run(as_pool *p, as_pool_fn fn, void *ctx, int n_tasks)
{
    if (!p || p->n == 1 || n_tasks < 2) {
        for (int t = 0; t < n_tasks; t++)
            fn(ctx, t);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->joins, 0, memory_order_relaxed);
    for (int i = 0; i < p->n; i++)
        atomic_store_explicit(&p->range[i].r, RANGE((long)n_tasks * i / p->n, (long)n_tasks * (i + 1) / p->n),
                              memory_order_relaxed);
    uint64_t g = gen_of(atomic_load(&p->state)) + 1;
    atomic_store(&p->state, g << GEN_SHIFT);
    if (atomic_load(&p->sleepers)) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    drain(p, 0);
    /* Every task is claimed; close the job and wait for the workers still
     * finishing one. After a while, yield: one may have been preempted on
     * this core (more threads than free cores). */
    atomic_fetch_or(&p->state, CLOSED);
    for (int k = 0; atomic_load_explicit(&p->state, memory_order_acquire) & ACTIVE_MASK; k++) {
        if (k > 4096)
            sched_yield();
        else
            cpu_relax();
    }
}
