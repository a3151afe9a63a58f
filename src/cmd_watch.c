/* Watches: `watch HOOK COND` (a rule that stops continue and gen when
 * its condition holds on a hook's values), `unwatch`, `watches`. */
#include <stdio.h>
#include <string.h>

#include "session_internal.h"

/* "HOOK nan" or "HOOK max|min|absmax|mean >|< VALUE". */
static int parse_watch(cmd_ctx *c, as_watch_cond *cond, double *thr)
{
    static const struct {
        const char *word, *op;
        as_watch_cond cond;
    } forms[] = {{"max", ">", AS_WATCH_MAX_GT}, {"min", "<", AS_WATCH_MIN_LT}, {"absmax", ">", AS_WATCH_ABSMAX_GT},
                 {"mean", ">", AS_WATCH_MEAN_GT}, {"mean", "<", AS_WATCH_MEAN_LT}};
    *thr = 0;
    if (c->argc == 3 && (!strcmp(c->argv[2], "nan") || !strcmp(c->argv[2], "inf") || !strcmp(c->argv[2], "nonfinite"))) {
        *cond = AS_WATCH_NONFINITE;
        return AS_OK;
    }
    for (size_t k = 0; c->argc == 5 && k < sizeof forms / sizeof *forms; k++) {
        if (strcmp(c->argv[2], forms[k].word) || strcmp(c->argv[3], forms[k].op))
            continue;
        *cond = forms[k].cond;
        return as_cmd_parse_float(c->argv[4], -1e30, 1e30, "the threshold", thr, c->err);
    }
    return as_error_set(c->err, "usage: watch HOOK nan | watch HOOK max|absmax|mean > X | watch HOOK min|mean < X");
}

int as_cmd_watch(cmd_ctx *c)
{
    as_session *s = c->s;
    as_watch_cond cond;
    double thr;
    if (c->argc < 3 || parse_watch(c, &cond, &thr))
        return c->argc < 3 ? parse_watch(c, &cond, &thr) : AS_ERR;
    char label[96];
    size_t o = 0;
    for (int i = 1; i < c->argc && o < sizeof label; i++)
        o += (size_t)snprintf(label + o, sizeof label - o, "%s%s", i > 1 ? " " : "", c->argv[i]);
    int matched = 0;
    for (int h = 0; h < s->prog->n_hooks; h++) {
        if (!as_hook_name_match(c->argv[1], s->prog->hooks[h].name))
            continue;
        as_rule r = {.kind = AS_RULE_WATCH, .hook = h, .head = -1, .pos = -1, .cond = cond, .threshold = (float)thr};
        snprintf(r.label, sizeof r.label, "%s", label);
        if (as_interp_add_rule(s->it, &r, 0, c->err))
            return AS_ERR;
        matched++;
    }
    if (!matched)
        return as_error_set(c->err, "no hook point matches '%s' (`hooks` lists them)", c->argv[1]);
    fprintf(s->out, "watching %d hook point%s: %s (stops continue and gen)\n", matched, matched == 1 ? "" : "s", label);
    return AS_OK;
}

int as_cmd_unwatch(cmd_ctx *c)
{
    int n = as_interp_clear_rules(c->s->it, true);
    fprintf(c->s->out, "removed %d watch%s\n", n, n == 1 ? "" : "es");
    return AS_OK;
}

int as_cmd_watches(cmd_ctx *c) { return as_cmd_list_rules(c, true); }
