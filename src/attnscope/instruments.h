/* instruments: analyses computed from a model and its capture, for
 * debugging and teaching: the logit lens, direct logit attribution, head
 * detector scores, and weight statistics. Pure functions of their inputs;
 * the commands that show them live in the cmd_*.c files, one per instrument. */
#ifndef ATTNSCOPE_INSTRUMENTS_H
#define ATTNSCOPE_INSTRUMENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "attnscope/capture.h"
#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/gguf.h"
#include "attnscope/model.h"
#include "attnscope/quant.h"

/* The logit lens (as_lens_logits, as_lens_logits_rows): engine.h. */

/* Direct logit attribution at one position: each component's share of
 * the token's logit through the final norm (its mean and scale as captured,
 * held fixed). Components: the embeddings, every head, every attention
 * output bias, every MLP; `constant` is the final norm's bias term. */
typedef struct as_dla_term {
    char name[48];
    int layer, head;   /* head -1 for non-head terms; layer -1 for embeddings */
    double value;
} as_dla_term;

typedef struct as_dla {
    as_dla_term *terms;
    int n_terms;
    double constant;
    double logit;      /* the logit itself, for comparison with the sum */
} as_dla;

int as_dla_compute(const as_capture *cap, const int32_t *tokens, int pos, int32_t token, as_dla *out,
                   as_error *err);
void as_dla_free(as_dla *d);

/* Head detector scores from one layer's pattern over a token sequence:
 * mean attention on the expected key, over the queries where it exists. */
typedef enum as_head_score {
    AS_SCORE_PREV_TOKEN,  /* key q-1 */
    AS_SCORE_FIRST_TOKEN, /* key 0 (attention sink), queries q >= 1 */
    AS_SCORE_DUPLICATE,   /* earlier keys holding the same token */
    AS_SCORE_INDUCTION,   /* keys right after an earlier occurrence of the same token */
    AS_SCORE_NEXT_TOKEN,  /* key q+1: only where queries see later keys (an encoder) */
    AS_SCORE_COUNT
} as_head_score;

const char *as_head_score_name(as_head_score s);
/* Score for head `head` of pattern hook `hook` over positions [0, n);
 * NaN when no query qualifies. */
double as_head_score_of(const as_capture *cap, int hook, int head, const int32_t *tokens, int n,
                        as_head_score kind);
/* Why no query of tokens [0, n) qualifies for a score ("no token
 * repeats"), so that it is undefined for every head; NULL when some does. */
const char *as_head_score_undefined(const int32_t *tokens, int n, as_head_score kind);
/* Long-context statistics of one head's pattern over positions [0, n),
 * averaged over queries; NaN when no query qualifies:
 * AS_STAT_SINK: the weight on the first AS_SINK_KEYS keys (summed),
 *   queries q >= AS_SINK_KEYS (earlier ones see nothing else);
 * AS_STAT_DISTANCE: sum_k w_qk |q - k| (q - k on a causal site), queries q >= 1;
 * AS_STAT_ENTROPY: -sum_k w_qk ln w_qk in nats, queries q >= 1.
 * Only the keys query q sees are read (a window's early ones are 0). */
#define AS_SINK_KEYS 4
typedef enum as_head_stat { AS_STAT_SINK, AS_STAT_DISTANCE, AS_STAT_ENTROPY, AS_STAT_COUNT } as_head_stat;
const char *as_head_stat_name(as_head_stat s);
double as_head_stat_of(const as_capture *cap, int hook, int head, int n, as_head_stat kind);

/* Retrieval (copy) score of one head, after Wu et al. 2024 ("Retrieval
 * Head Mechanistically Explains Long-Context Factuality", sec. 2), on a
 * context read whole (teacher-forced): the needle is tokens [p, p + m),
 * and query q "generates" w = tokens[q + 1]. For every query q with
 * q + 1 >= p + m (past the planted needle) whose w is one of the needle's
 * tokens, the head copies w when its top key j (the row's argmax, the
 * first on ties) is inside the needle and holds w (tokens[j] == w). The
 * score is copies / such queries: with the needle said once again in
 * full, Wu et al.'s |g_h ∩ k| / |k|. *n_counted the queries counted; NaN
 * when none. */
double as_retrieval_score(const as_capture *cap, int hook, int head, const int32_t *tokens, int n, int p, int m,
                          int *n_counted);

/* The repeated-random-token probe: [bos] R R with R of length len drawn
 * (fixed seed) from ids in [lo, hi). Returns the token count. */
int as_induction_probe(int32_t *out, int32_t bos, int len, int32_t lo, int32_t hi, uint64_t seed);

/* Statistics of a tensor's values (dequantized) and, for a block type,
 * of its blocks' scales. */
#define AS_HIST_BINS 12
typedef struct as_weight_stats {
    double min, max, mean, std, norm;
    uint64_t n, nan, inf, zeros;
    uint64_t hist[AS_HIST_BINS]; /* over [min, max] of the finite values */
    as_block_scan scales;        /* blocks == 0 for a type without scales (F32, F16, BF16) */
} as_weight_stats;

int as_weight_stats_of(const as_gguf_tensor *t, as_weight_stats *st, as_error *err);

/* One file's non-finite values in a comparison: how many, and the first
 * (a flat index into the tensor, ne[0] fastest) with the value there and
 * the other file's value at the same place. */
typedef struct as_weight_nonfinite {
    uint64_t nan, inf;
    uint64_t first;     /* UINT64_MAX: none */
    float value, other;
} as_weight_nonfinite;

/* Two same-shaped tensors compared value by value, dequantized (their
 * types may differ). Non-finite values are never cancelled: the norms run
 * over the elements finite in both files (norm_a over those finite in a),
 * and every NaN or Inf is counted and located per file; `mismatch` counts
 * the places where the two are not the same non-finite value (NaN and NaN,
 * or Inf of one sign) while one of them is non-finite. For a block type,
 * scales[k] holds the scan of file k's block scales (blocks == 0 otherwise). */
typedef struct as_weight_delta {
    uint64_t n;               /* elements */
    uint64_t changed;         /* finite in both and unequal */
    double diff_norm, norm_a; /* ||a-b||, ||a|| */
    double max_abs;           /* the largest |a-b| of those, at flat index max_at */
    uint64_t max_at;
    float max_a, max_b;       /* the two values there */
    as_weight_nonfinite nf[2];         /* a's, b's */
    uint64_t mismatch, first_mismatch; /* first_mismatch: UINT64_MAX when none */
    as_block_scan scales[2];
} as_weight_delta;

/* Fails (naming the tensor) when the shapes differ. */
int as_weight_compare(const as_gguf_tensor *a, const as_gguf_tensor *b, as_weight_delta *d, as_error *err);
/* ||a-b|| / ||a|| of a comparison, never NaN: 0 when nothing changed,
 * INFINITY when ||a|| is 0 and b is not, or when non-finite values do not
 * match (the difference is unbounded: say "non-finite"). */
double as_weight_delta_rel(const as_weight_delta *d);
/* as_weight_compare's relative difference and norms, for a caller that
 * needs only those. */
int as_weight_diff(const as_gguf_tensor *a, const as_gguf_tensor *b, double *rel, double *diff_norm,
                   double *norm_a, as_error *err);

/* Attention rollout (Abnar & Zuidema 2020) over the self-attention sites
 * of a non-causal stream, in layer order: per layer A = 0.5 · (mean over
 * heads of the pattern) + 0.5 · I, each row renormalised to sum 1, and
 * R = A_{L-1} · … · A_0. out: [n][n] (row q: how much each input
 * position flows into position q's output). AS_ERR, saying which, when a
 * layer's pattern is not captured or not filled over n positions. */
int as_attn_rollout(const as_capture *cap, int n, float *out, as_error *err);
/* The same over the first n_layers such layers only. */
int as_attn_rollout_layers(const as_capture *cap, int n, int n_layers, float *out, as_error *err);

#endif
