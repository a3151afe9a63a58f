/* `export norms LAYER|final`: a layer's LayerNorm or RMSNorm statistics
 * (its input's mean, spread and largest dimensions) across the context's
 * tokens, from the norm ops' captured statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

int as_export_norms(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 4)
        return as_error_set(c->err, "usage: export norms LAYER|final FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    const char *path = c->argv[3];
    export_fig fig;
    int layer = -1;
    bool final = !strcmp(c->argv[2], "final");
    if ((!final && as_export_parse_layer(s, c->argv[2], &layer, c->err)) ||
        as_export_begin(&fig, c, path, 4, OPT_FIG | OPT_SCALE | OPT_HIDE_BOS | OPT_TOKENS))
        return AS_ERR;
    /* the context's own norms (an encoder-decoder's: the decoder's) */
    int out = s->prog->out_stream;
    int h1 = as_program_hook_in(s->prog, final ? AS_HK_LNF_SCALE : AS_HK_LN1_SCALE, layer, out);
    int h2 = final ? -1 : as_program_hook_in(s->prog, AS_HK_LN2_SCALE, layer, out);
    if (h1 < 0)
        return as_error_set(c->err, "the %s stream has no block %d (an encoder-decoder's stacks may differ in depth)",
                            s->prog->streams[out].name, layer);
    int n = as_cmd_hook_positions(s, h1, c->err), a, b;
    if (n < 0 || as_export_window(s, &fig.o, n, &a, &b, c->err))
        return AS_ERR;
    bool two = h2 >= 0 && s->cap->filled[h2] >= b;
    int m = b - a;
    as_norm_stat *st = malloc((size_t)m * 2 * sizeof *st);
    char **labels = as_export_position_labels(s, a, b, a > 0 || b < n);
    int rc = AS_ERR;
    if (!st || !labels) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    /* the scale is non-finite exactly where the norm's input is: its statistics would be made up */
    if (as_cmd_check_finite(s, s->cap, h1, a, b, "export norms: no figure", c->err) ||
        (two && as_cmd_check_finite(s, s->cap, h2, a, b, "export norms: no figure", c->err)))
        goto out;
    for (int i = 0; i < m; i++) {
        st[i] = *as_capture_norm(s->cap, h1, a + i);
        if (two)
            st[m + i] = *as_capture_norm(s->cap, h2, a + i);
    }
    const as_op *norm = as_program_producer(s->prog, h1);
    bool rms = norm->norm == AS_NORM_RMS;
    as_fig_norms nm = {m, (const char *const *)labels, rms, norm->n_in, two ? 2 : 1,
                       {{final ? "ln_final (unembedding input)" : "ln1 (attention input)", st},
                        {"ln2 (MLP input)", st + m}}};
    char what[64];
    const char *kind = rms ? "RMSNorm" : "LayerNorm";
    if (final)
        as_export_title(&fig, "Final %s: its input across tokens", kind);
    else
        as_export_title(&fig, "Layer %d %s statistics across tokens", layer, kind);
    as_export_note_window(&fig, a, b, n);
    if (fig.o.hide_bos && a == 1)
        as_export_note(&fig, "hide-bos: the first token (position 0) is not shown.");
    as_export_meta(&fig, "Layer", final ? "final" : "%d", layer);
    snprintf(what, sizeof what, final ? "norms final" : "norms layer %d", layer);
    rc = as_export_write(&fig, EXPORT_NORMS, &nm, a, b, what);
out:
    as_export_free_labels(labels, m);
    free(st);
    return rc;
}

