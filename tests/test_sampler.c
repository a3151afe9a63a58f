/* The sampler: greedy is argmax, top-k 1 and a tiny top-p are greedy, the
 * same seed repeats, and temperature-1 draws follow the softmax. */
#include <criterion/criterion.h>
#include <math.h>

#include "attnscope/sampler.h"

static const float logits[6] = {1.0f, 3.0f, 2.5f, -1.0f, 0.0f, 2.9f};

static int32_t pick(as_sampler *s, const float *l, int n)
{
    float probs[64];
    int order[64];
    int32_t out = -1;
    as_error err;
    cr_assert_eq(as_sampler_pick(s, l, n, probs, order, &out, &err), AS_OK);
    return out;
}

Test(sampler, greedy_is_argmax)
{
    as_sampler s;
    as_sampler_init(&s);
    cr_assert_eq(pick(&s, logits, 6), 1);
}

Test(sampler, top_k_one_and_tiny_top_p_are_greedy)
{
    as_sampler s;
    as_sampler_init(&s);
    s.temp = 1.5f;
    s.top_k = 1;
    for (int i = 0; i < 50; i++)
        cr_assert_eq(pick(&s, logits, 6), 1);
    s.top_k = 0;
    s.top_p = 1e-4f;
    for (int i = 0; i < 50; i++)
        cr_assert_eq(pick(&s, logits, 6), 1);
}

Test(sampler, top_k_never_leaves_the_k_best)
{
    as_sampler s;
    as_sampler_init(&s);
    s.temp = 5.0f; /* flat enough that every token would appear without top-k */
    s.top_k = 3;
    for (int i = 0; i < 500; i++) {
        int32_t t = pick(&s, logits, 6);
        cr_assert(t == 1 || t == 5 || t == 2, "token %d is outside the top 3", t);
    }
}

Test(sampler, same_seed_same_tokens)
{
    as_sampler a, b;
    as_sampler_init(&a);
    as_sampler_init(&b);
    a.temp = b.temp = 1.0f;
    as_sampler_seed(&a, 11);
    as_sampler_seed(&b, 11);
    int differ = 0;
    for (int i = 0; i < 100; i++)
        cr_assert_eq(pick(&a, logits, 6), pick(&b, logits, 6));
    as_sampler_seed(&b, 12);
    as_sampler_seed(&a, 11);
    for (int i = 0; i < 100; i++)
        differ += pick(&a, logits, 6) != pick(&b, logits, 6);
    cr_assert_gt(differ, 10);
}

Test(sampler, temperature_one_follows_the_softmax)
{
    as_sampler s;
    as_sampler_init(&s);
    s.temp = 1.0f;
    float p[6];
    as_probs(logits, 6, p);
    int counts[6] = {0}, n = 20000;
    for (int i = 0; i < n; i++)
        counts[pick(&s, logits, 6)]++;
    /* Binomial standard error at n = 20000 is below 0.0036; allow 4 of them. */
    for (int v = 0; v < 6; v++)
        cr_assert_float_eq((double)counts[v] / n, p[v], 0.015, "token %d: %g vs %g", v, (double)counts[v] / n, p[v]);
}

Test(sampler, nan_logits_are_never_chosen)
{
    float l[4] = {NAN, 0.5f, NAN, 0.2f}, all_nan[2] = {NAN, NAN};
    as_sampler s;
    as_sampler_init(&s);
    cr_assert_eq(pick(&s, l, 4), 1);
    s.temp = 1.0f;
    for (int i = 0; i < 100; i++) {
        int32_t t = pick(&s, l, 4);
        cr_assert(t == 1 || t == 3);
    }
    float probs[2];
    int order[2];
    int32_t out;
    as_error err;
    cr_assert_eq(as_sampler_pick(&s, all_nan, 2, probs, order, &out, &err), AS_ERR);
}

/* The view's probabilities at a temperature are the sampler's softmax: a
 * NaN logit gets 0 and the rest still sum to 1 (the pane's own softmax
 * made every probability NaN), the same values as as_probs of logits / t. */
Test(sampler, softmax_at_a_temperature_treats_nan_as_as_probs_does)
{
    float lg[5] = {1.0f, NAN, 3.0f, -2.0f, 0.5f}, p[5], q[5], scaled[5];
    as_probs_temp(lg, 5, 0.7f, p);
    double sum = 0;
    for (int i = 0; i < 5; i++) {
        cr_assert(isfinite(p[i]), "p[%d] = %g", i, p[i]);
        sum += p[i];
    }
    cr_assert_eq(p[1], 0.0f);
    cr_assert_float_eq(sum, 1.0, 1e-6);
    for (int i = 0; i < 5; i++)
        scaled[i] = lg[i] / 0.7f;
    as_probs(scaled, 5, q);
    for (int i = 0; i < 5; i++)
        cr_assert(p[i] == q[i] || (isnan(p[i]) && isnan(q[i])));
    cr_assert(p[2] > p[0] && p[0] > p[4] && p[4] > p[3], "ordered as the lg");
}
