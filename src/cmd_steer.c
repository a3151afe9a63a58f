/* `steer HOOK FILE.npy [scale=S] [pos=P]`: a steering vector added to a
 * hook as it is filled, at every position or at one. A rule like the
 * ablations (AS_RULE_ADD): `ablations` lists it, `unablate` removes it,
 * and adding it makes what was computed before stale (rules_gen). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/npy.h"
#include "session_internal.h"

int as_cmd_steer(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *usage = "usage: steer HOOK FILE.npy [scale=S] [pos=P]  (`unablate` removes it)";
    if (c->argc < 3 || c->argc > 5)
        return as_error_set(c->err, "%s", usage);
    int hook = as_cmd_find_hook(s, c->argv[1], c->err);
    if (hook < 0)
        return AS_ERR;
    const as_hook *hk = &s->prog->hooks[hook];
    if (hk->is_attn || hk->dtype != AS_DT_F32)
        return as_error_set(c->err, "steer adds a vector to a hook of activations; %s holds %s", hk->name,
                            hk->is_attn ? "attention scores or weights (one row per query and head)"
                                        : "integer indices (the experts chosen)");
    double scale = 1.0;
    int pos = -1;
    for (int i = 3; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (!strncmp(a, "scale=", 6)) {
            if (as_cmd_parse_float(a + 6, -1e30, 1e30, "the scale", &scale, c->err))
                return AS_ERR;
        } else if (!strncmp(a, "pos=", 4)) {
            const as_stream_state *st = &s->it->st[hk->stream];
            long p;
            if (st->n_tokens > 0 && hk->stream == s->prog->out_stream) {
                if (as_cmd_parse_pos(s, a + 4, &pos, c->err))
                    return AS_ERR;
            } else {
                if (as_cmd_parse_long(a + 4, 0, st->n_ctx - 1, "the position", &p, c->err))
                    return AS_ERR;
                pos = (int)p;
            }
        } else {
            return as_error_set(c->err, "steer: '%s' is neither scale=S nor pos=P (%s)", a, usage);
        }
    }
    float *v = NULL;
    size_t shape[AS_NPY_MAX_DIMS];
    int nd = 0;
    if (as_npy_read_f32(c->argv[2], &v, shape, &nd, c->err))
        return AS_ERR;
    size_t count = 1;
    for (int k = 0; k < nd; k++)
        count *= shape[k];
    if (count != (size_t)hk->width) {
        char want[64];
        as_cmd_format_shape(s, hook, 0, want, sizeof want);
        free(v);
        return as_error_set(c->err, "%s holds %zu values; %s takes %d a position (%s)", c->argv[2], count, hk->name,
                            hk->width, want);
    }
    double norm = 0;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(v[i])) {
            free(v);
            return as_error_set(c->err, "%s holds a non-finite value at index %zu", c->argv[2], i);
        }
        v[i] = (float)(v[i] * scale);
        norm += (double)v[i] * v[i];
    }
    char label[96], ptxt[20] = ""; /* 9 + 40 + 7 + 13 + 19 < 96: the rule's label, whole */
    if (pos >= 0)
        snprintf(ptxt, sizeof ptxt, " pos=%d", pos);
    const char *base = strrchr(c->argv[2], '/');
    snprintf(label, sizeof label, "steer by %.40s scale=%g%s", base ? base + 1 : c->argv[2], scale, ptxt);
    int rc = as_cmd_add_rule(s, AS_RULE_ADD, hook, -1, pos, v, false, label, c->err);
    free(v);
    if (rc)
        return AS_ERR;
    char where[64];
    if (pos >= 0)
        snprintf(where, sizeof where, "at position %d", pos);
    fprintf(s->out, "steering %s: + %s × %g (|vector| = %.6g) %s; `ablations` lists it, `unablate` removes it\n",
            hk->name, c->argv[2], scale, sqrt(norm), pos >= 0 ? where : "at every position");
    return AS_OK;
}
