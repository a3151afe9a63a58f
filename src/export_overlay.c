/* `export overlay LAYER HEAD|mean|rollout|all` (and `rollout FILE.png`):
 * a vision transformer's attention from its class position laid over the
 * input image's patches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "export_internal.h"

/* export overlay LAYER HEAD|mean|rollout|all FILE: [CLS]'s attention to
 * the patches over the input image (one head, the mean of the heads, the
 * rollout through layers 0..LAYER, or every head of the layer). */
int as_cmd_export_overlay(cmd_ctx *c)
{
    as_session *s = c->s;
    static const char usage[] = "usage: export overlay LAYER HEAD|mean|rollout|all FILE.png|FILE.svg|FILE.pdf "
                                "[key=value ...]";
    if (c->argc < 5)
        return as_error_set(c->err, "%s", usage);
    const as_stream *st = &s->prog->streams[s->prog->out_stream];
    if (st->input != AS_INPUT_PIXELS)
        return as_error_set(c->err, "export overlay lays attention over an image: %s reads tokens (export attn "
                                    "draws its heatmap)", s->model->cfg.name);
    int layer, H = s->model->cfg.n_head;
    long head = -1;
    const char *which = c->argv[3];
    bool mean = !strcmp(which, "mean"), roll = !strcmp(which, "rollout"), all = !strcmp(which, "all");
    if (as_export_parse_layer(s, c->argv[2], &layer, c->err) ||
        (!mean && !roll && !all && as_cmd_parse_long(which, 0, H - 1, "the head (or mean, rollout, all)", &head, c->err)))
        return AS_ERR;
    const char *path = c->argv[4];
    export_fig fig;
    if (as_export_begin(&fig, c, path, 5, OPT_FIG | OPT_CMAP) || as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    int hook = as_program_hook(s->prog, AS_HK_PATTERN, layer), n = s->it->out->n_tokens;
    int q = s->prog->logits_pos >= 0 ? s->prog->logits_pos : 0;
    if (hook < 0 || !as_capture_has(s->cap, hook) || s->cap->filled[hook] < n)
        return as_error_set(c->err, "blocks.%d.attn.hook_pattern is not computed yet (`finish` runs the pass)", layer);
    const as_patch_spec *ps = &st->patch;
    int G = ps->grid, NP = G * G, S = ps->size, n_maps = all ? H : 1;
    float *maps = calloc((size_t)n_maps * (size_t)NP, sizeof *maps), *roll_m = NULL;
    uint8_t *rgb = malloc((size_t)S * (size_t)S * 3);
    const float **mp = calloc((size_t)n_maps, sizeof *mp);
    char(*names)[32] = calloc((size_t)n_maps, sizeof *names);
    const char **titles = calloc((size_t)n_maps, sizeof *titles);
    int rc = AS_OK;
    if (!maps || !rgb || !mp || !names || !titles) {
        rc = as_error_set(c->err, "out of memory");
        goto out;
    }
    if (roll) {
        if (!(roll_m = malloc((size_t)n * (size_t)n * sizeof *roll_m))) {
            rc = as_error_set(c->err, "out of memory");
            goto out;
        }
        if ((rc = as_attn_rollout_layers(s->cap, n, layer + 1, roll_m, c->err)))
            goto out;
        for (int i = 0; i < NP; i++)
            maps[i] = roll_m[(size_t)q * (size_t)n + 1 + (size_t)i];
    } else {
        for (int m = 0; m < n_maps; m++)
            for (int i = 0; i < NP; i++) {
                if (mean) {
                    double sum = 0;
                    for (int h = 0; h < H; h++)
                        sum += as_capture_attn(s->cap, hook, h, q, 1 + i);
                    maps[i] = (float)(sum / H);
                } else {
                    maps[(size_t)m * NP + (size_t)i] = as_capture_attn(s->cap, hook, all ? m : (int)head, q, 1 + i);
                }
            }
    }
    for (int i = 0; i < n_maps * NP; i++)
        if (!isfinite(maps[i])) { /* drawn as 0, it would look like a head that looks nowhere */
            rc = as_cmd_check_finite(s, s->cap, hook, roll ? 0 : q, roll ? n : q + 1, "export overlay: no figure",
                                     c->err);
            if (rc == AS_OK)
                rc = as_error_set(c->err, "export overlay: no figure: the map holds %g at patch %d", maps[i], i % NP);
            goto out;
        }
    float vmax = 0;
    for (int i = 0; i < n_maps * NP; i++)
        vmax = maps[i] > vmax ? maps[i] : vmax;
    if (!(vmax > 0))
        vmax = 1;
    for (int m = 0; m < n_maps; m++) {
        mp[m] = maps + (size_t)m * NP;
        snprintf(names[m], sizeof names[m], "head %d", m);
        titles[m] = names[m];
    }
    const float *px = s->it->st[s->prog->out_stream].pixels;
    for (int i = 0; i < S * S; i++)
        for (int k = 0; k < 3; k++) {
            int ch = ps->channels == 1 ? 0 : k;
            float v = px[(size_t)ch * (size_t)S * (size_t)S + (size_t)i] * st->image.std[ch] + st->image.mean[ch];
            rgb[(size_t)i * 3 + (size_t)k] = (uint8_t)lrintf(255 * (v < 0 ? 0 : v > 1 ? 1 : v));
        }
    char qn[32];
    as_cmd_position_label(s, q, qn, sizeof qn);
    if (roll)
        as_export_title(&fig, "Attention rollout to %s, layers 0-%d", qn, layer);
    else if (all)
        as_export_title(&fig, "Layer %d \xC2\xB7 every head \xC2\xB7 %s's attention", layer, qn);
    else if (mean)
        as_export_title(&fig, "Layer %d \xC2\xB7 mean of %d heads \xC2\xB7 %s's attention to the patches", layer, H, qn);
    else
        as_export_title(&fig, "Layer %d \xC2\xB7 head %ld \xC2\xB7 %s's attention to the patches", layer, head, qn);
    as_export_note(&fig, "Colour over each of the %d x %d patches: %s, on a scale from 0 to the largest shown (%.3g); "
                      "the weight on %s itself is not drawn%s.",
                 G, G, roll ? "its share of the rollout (Abnar & Zuidema: 0.5 x mean over heads + 0.5 x I per layer, "
                              "rows renormalised, multiplied through the layers)"
                            : "the attention weight",
                 (double)vmax, qn, roll ? "" : " (it takes the rest of the row)");
    as_fig_overlay ov = {.size = S, .rgb = rgb, .grid = G, .n_maps = n_maps, .maps = mp,
                         .map_titles = all ? titles : NULL, .vmax = vmax, .alpha = 0.6f, .marked = -1,
                         .cbar_label = roll ? "rollout share" : "attention weight"};
    if (q >= 1)
        ov.marked = q - 1;
    char what[96];
    snprintf(what, sizeof what, "overlay layer %d %s", layer, which);
    rc = as_export_write(&fig, EXPORT_OVERLAY, &ov, 0, n, what);
out:
    free(maps);
    free(roll_m);
    free(rgb);
    free(mp);
    free(names);
    free(titles);
    return rc;
}
