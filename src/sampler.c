#include "attnscope/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void as_sampler_init(as_sampler *s)
{
    s->temp = 0.0f;
    s->top_k = 0;
    s->top_p = 1.0f;
    as_sampler_seed(s, 42);
}

void as_sampler_seed(as_sampler *s, uint64_t seed)
{
    s->seed = seed;
    s->state = seed ^ 0x9E3779B97F4A7C15ull;
}

/* splitmix64: small, fast, and the same on every machine. */
uint64_t as_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void as_probs(const float *logits, int n, float *probs)
{
    float mx = -INFINITY;
    for (int i = 0; i < n; i++)
        if (logits[i] > mx)
            mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n; i++) {
        probs[i] = isnan(logits[i]) ? 0.0f : expf(logits[i] - mx);
        sum += probs[i];
    }
    for (int i = 0; i < n; i++)
        probs[i] = (float)(probs[i] / sum);
}

void as_probs_temp(const float *logits, int n, float temp, float *probs)
{
    for (int i = 0; i < n; i++)
        probs[i] = logits[i] / temp;
    as_probs(probs, n, probs);
}

static int by_value_desc(const void *a, const void *b, void *keys)
{
    const float *v = keys;
    float x = v[*(const int *)a], y = v[*(const int *)b];
    if (isnan(x))
        return isnan(y) ? 0 : 1;
    if (isnan(y))
        return -1;
    return (x < y) - (x > y);
}

int as_top_indices(const float *x, int n, int k, int *idx)
{
    if (k > n)
        k = n;
    /* Partial selection: keep a sorted list of the best k seen. */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(x[i]))
            continue;
        if (m == k && !(x[i] > x[idx[m - 1]]))
            continue;
        int j = m < k ? m++ : k - 1;
        while (j > 0 && x[i] > x[idx[j - 1]]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return m;
}

static int argmax(const float *x, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i]) && (best < 0 || x[i] > x[best]))
            best = i;
    return best;
}

int as_sampler_pick(as_sampler *s, const float *logits, int n, float *probs, int *order, int32_t *out,
                    as_error *err)
{
    int best = argmax(logits, n);
    if (best < 0)
        return as_error_set(err, "cannot sample: every logit is NaN");
    if (s->temp <= 0.0f) {
        *out = best;
        return AS_OK;
    }
    as_probs_temp(logits, n, s->temp, probs);
    int m = s->top_k > 0 && s->top_k < n ? s->top_k : n;
    if (m < n) {
        m = as_top_indices(probs, n, m, order);
    } else {
        for (int i = 0; i < n; i++)
            order[i] = i;
        qsort_r(order, (size_t)n, sizeof *order, by_value_desc, probs);
    }
    /* Nucleus: the smallest prefix whose mass reaches top_p. */
    double mass = 0;
    int keep = 0;
    while (keep < m) {
        mass += probs[order[keep++]];
        if (s->top_p < 1.0f && mass >= s->top_p)
            break;
    }
    double r = (double)(as_rng_next(&s->state) >> 11) * 0x1.0p-53 * mass, acc = 0;
    for (int i = 0; i < keep; i++) {
        acc += probs[order[i]];
        if (r < acc) {
            *out = order[i];
            return AS_OK;
        }
    }
    *out = order[keep - 1];
    return AS_OK;
}
