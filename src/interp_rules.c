/* interp_rules: the rules on hooks (breakpoints' watches, interventions,
 * expert rules), applied as each op fills its hook, and the first NaN or
 * Inf, looked for in each hook as it is filled; whether the captured
 * values are stale after a change of rules. */
#include "attnscope/interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "interp_internal.h"

static bool scan(as_interp *it, int h, int pos, const float *x, int len, int base)
{
    if (as_all_finite(x, len))
        return false;
    for (int j = 0; j < len; j++) {
        if (!isfinite(x[j])) {
            it->nonfinite = (as_nonfinite){true, h, pos, base + j, x[j]};
            return true;
        }
    }
    return false;
}

/* Records where a NaN or Inf first appears in this pass: users debugging a
 * broken conversion need the first hook, not the logits it ruined. */
void as_interp_check_finite(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    as_interp_check_finite_rows(it, op, op->last_row_only && !as_capture_stored(it->cap, op->out) ? st->n - 1 : 0,
                                st->n);
}

void as_interp_check_finite_rows(as_interp *it, const as_op *op, int i0, int i1)
{
    const as_hook *hk = &it->prog->hooks[op->out];
    const as_stream_state *st = &it->st[hk->stream];
    if (it->nonfinite.found || !it->span[op->out]) /* a fused site's rows: none kept (a NaN shows in z) */
        return;
    for (int i = i0; i < i1; i++) {
        int q = st->p0 + i;
        if (!hk->is_attn) {
            if (scan(it, op->out, q, span_row(it, op->out, i), hk->width, 0))
                return;
            continue;
        }
        const as_attn *a = &it->prog->attn[hk->attn];
        int len = attn_row_len(it, a, i);
        for (int head = 0; head < hk->width; head++) {
            const float *x = as_interp_attn_row(it, op->out, head, i);
            /* A window's hidden keys hold -inf by design: scan what is seen. */
            int k0 = a->mask == AS_MASK_WINDOW && q - a->window + 1 > 0 ? q - a->window + 1 : 0;
            if (scan(it, op->out, q, x + k0, len - k0, head * len + k0))
                return;
        }
    }
}

int as_rule_len(const as_interp *it, const as_rule *r)
{
    const as_hook *h = &it->prog->hooks[r->hook];
    return r->head >= 0 ? h->dims[1] : h->width;
}

/* The expert rules act on a routed MLP's slots, whichever position chose
 * the expert: its slots of experts.hook_out zeroed (read against the
 * indices the producing op read), or the top k chosen again from the
 * weights without every expert routed off at this hook. */
static void apply_expert_rule(as_interp *it, const as_rule *r)
{
    const as_op *op = as_program_producer(it->prog, r->hook);
    const as_stream_state *st = span_of(it, r->hook);
    if (!op)
        return;
    int E = op->n_expert, k = op->k;
    for (int i = 0; i < st->n; i++) {
        if (r->pos >= 0 && r->pos != st->p0 + i)
            continue;
        float *y = span_row(it, r->hook, i);
        if (r->kind == AS_RULE_EXPERT_ZERO) {
            const float *ix = span_row(it, op->in[1], i);
            for (int j = 0; j < k; j++)
                if (as_interp_expert_of(ix[j], E) == r->head)
                    memset(y + (size_t)j * (size_t)op->n_out, 0, (size_t)op->n_out * sizeof *y);
            continue;
        }
        bool off[AS_MAX_EXPERTS] = {false};
        for (int q = 0; q < it->n_rules; q++)
            if (it->rules[q].kind == AS_RULE_ROUTE_OFF && it->rules[q].hook == r->hook && it->rules[q].head >= 0 &&
                it->rules[q].head < E)
                off[it->rules[q].head] = true;
        /* -1 when too few are left: the slot contributes nothing */
        as_interp_choose_experts(op, span_row(it, op->in[0], i), off, y);
    }
}

static void apply_rule(as_interp *it, const as_rule *r)
{
    if (r->kind == AS_RULE_EXPERT_ZERO || r->kind == AS_RULE_ROUTE_OFF) {
        apply_expert_rule(it, r);
        return;
    }
    int len = as_rule_len(it, r), off = r->head >= 0 ? r->head * len : 0;
    const as_stream_state *st = span_of(it, r->hook);
    for (int i = 0; i < st->n; i++) {
        int pos = st->p0 + i;
        if (r->pos >= 0 && r->pos != pos)
            continue;
        float *dst = span_row(it, r->hook, i) + off;
        if (r->kind == AS_RULE_ZERO)
            memset(dst, 0, (size_t)len * sizeof *dst);
        else if (r->kind == AS_RULE_ADD)
            for (int j = 0; j < len; j++)
                dst[j] += r->values[j];
        else if (r->per_position && pos >= r->n_pos) /* past the positions the values came from */
            memset(dst, 0, (size_t)len * sizeof *dst);
        else
            memcpy(dst, r->values + (r->per_position ? (size_t)pos * (size_t)len : 0), (size_t)len * sizeof *dst);
    }
}

static bool watch_holds(const as_rule *r, const float *x, int len, int *at, float *val)
{
    double sum = 0;
    for (int j = 0; j < len; j++) {
        bool hit = false;
        switch (r->cond) {
        case AS_WATCH_MAX_GT: hit = x[j] > r->threshold; break;
        case AS_WATCH_MIN_LT: hit = x[j] < r->threshold; break;
        case AS_WATCH_ABSMAX_GT: hit = fabsf(x[j]) > r->threshold; break;
        case AS_WATCH_NONFINITE: hit = !isfinite(x[j]); break;
        default: sum += x[j];
        }
        if (hit) {
            *at = j, *val = x[j];
            return true;
        }
    }
    float mean = (float)(sum / (len ? len : 1));
    *at = -1, *val = mean;
    return (r->cond == AS_WATCH_MEAN_GT && mean > r->threshold) ||
           (r->cond == AS_WATCH_MEAN_LT && mean < r->threshold);
}

/* Checks a watch over the span's rows (attention: each head's row). */
static bool check_watch(as_interp *it, int k)
{
    const as_rule *r = &it->rules[k];
    const as_hook *h = &it->prog->hooks[r->hook];
    const as_stream_state *st = &it->st[h->stream];
    for (int i = 0; i < st->n; i++) {
        int q = st->p0 + i, at;
        float val;
        for (int head = 0; head < (h->is_attn ? h->width : 1); head++) {
            const float *x = h->is_attn ? as_interp_attn_row(it, r->hook, head, i) : span_row(it, r->hook, i);
            int len = h->is_attn ? attn_row_len(it, &it->prog->attn[h->attn], i) : h->width;
            if (watch_holds(r, x, len, &at, &val)) {
                it->watch_hit = (as_watch_hit){k, r->hook, q, at < 0 ? at : head * len + at, val};
                return true;
            }
        }
    }
    return false;
}

/* Applies interventions on the hook just filled; returns true if a watch fired. */
bool as_interp_has_rules(const as_interp *it, int hook)
{
    for (int k = 0; k < it->n_rules && !it->rules_off; k++)
        if (it->rules[k].hook == hook)
            return true;
    return false;
}

bool as_interp_apply_rules(as_interp *it, int hook)
{
    bool fired = false;
    for (int k = 0; k < it->n_rules && !it->rules_off; k++) {
        const as_rule *r = &it->rules[k];
        if (r->hook != hook)
            continue;
        if (r->kind == AS_RULE_WATCH)
            fired = fired || check_watch(it, k);
        else
            apply_rule(it, r);
    }
    return fired;
}

/* Something computed: a pass run or under way, or a stream's positions done. */
bool as_interp_has_state(const as_interp *it)
{
    if (it->n_passes > 0 || it->in_pass)
        return true;
    for (int s = 0; s < it->prog->n_streams; s++)
        if (it->st[s].n_done > 0)
            return true;
    return false;
}

static bool changes_values(const as_rule *r)
{
    return r->kind != AS_RULE_WATCH;
}

bool as_interp_stale(const as_interp *it)
{
    return as_interp_has_state(it) && (it->state_gen != it->rules_gen || it->state_off != it->rules_off ||
                                       it->state_native != !strcmp(as_get_activations(), "native") ||
                                       it->state_patterns != (int)as_get_patterns());
}

bool as_interp_state_clean(const as_interp *it)
{
    if (as_interp_stale(it))
        return false;
    for (int k = 0; k < it->n_rules && !it->state_off; k++)
        if (changes_values(&it->rules[k]))
            return false;
    return true;
}

int as_interp_add_rule(as_interp *it, const as_rule *r, size_t len, as_error *err)
{
    as_rule *rules = realloc(it->rules, (size_t)(it->n_rules + 1) * sizeof *rules);
    if (!rules)
        return as_error_set(err, "out of memory");
    it->rules = rules;
    as_rule *dst = &rules[it->n_rules];
    *dst = *r;
    dst->values = NULL;
    if (r->values) {
        if (r->per_position)
            dst->n_pos = it->st[it->prog->hooks[r->hook].stream].n_tokens;
        size_t n = len * (r->per_position ? (size_t)dst->n_pos : 1);
        dst->values = malloc(n * sizeof *dst->values);
        if (!dst->values)
            return as_error_set(err, "out of memory");
        memcpy(dst->values, r->values, n * sizeof *dst->values);
    }
    it->n_rules++;
    if (changes_values(dst))
        it->rules_gen++;
    return AS_OK;
}

void as_interp_rules_off(as_interp *it, bool off)
{
    it->rules_off = off;
}

void as_interp_truncate_rules(as_interp *it, int n)
{
    while (it->n_rules > n) {
        as_rule *r = &it->rules[--it->n_rules];
        if (changes_values(r))
            it->rules_gen++;
        free(r->values);
    }
}

int as_interp_clear_rules(as_interp *it, bool watches)
{
    int kept = 0, removed = 0;
    for (int k = 0; k < it->n_rules; k++) {
        if ((it->rules[k].kind == AS_RULE_WATCH) == watches) {
            if (changes_values(&it->rules[k]))
                it->rules_gen++;
            free(it->rules[k].values);
            removed++;
        } else {
            it->rules[kept++] = it->rules[k];
        }
    }
    it->n_rules = kept;
    return removed;
}
