/* cmd_image: the commands of a model that reads images: `image FILE`
 * (the input), `top` for a classifier (its classes at the position the
 * program gives its logits, [CLS]), and `rollout` (attention rollout to
 * [CLS], as text, .npy). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/image.h"
#include "attnscope/instruments.h"
#include "attnscope/sampler.h"
#include "session_internal.h"

/* The stream that reads pixels, or -1. */
static int pixel_stream(const as_session *s)
{
    for (int i = 0; i < s->prog->n_streams; i++)
        if (s->prog->streams[i].input == AS_INPUT_PIXELS)
            return i;
    return -1;
}

int as_cmd_image(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc != 2)
        return as_error_set(c->err, "usage: image FILE (PNG, JPEG, PGM or PPM)");
    int st = pixel_stream(s);
    if (st < 0)
        return as_error_set(c->err, "%s reads tokens, not images (`prompt TEXT` gives it its input)",
                            s->model->cfg.name);
    const as_stream *str = &s->prog->streams[st];
    const as_image_spec *spec = &str->image;
    as_image img;
    int orientation;
    if (as_image_load_ex(&img, c->argv[1], &orientation, c->err))
        return AS_ERR;
    size_t n = (size_t)spec->channels * (size_t)spec->size * (size_t)spec->size;
    float *px = malloc(n * sizeof *px);
    int rc = px ? as_image_prepare(&img, spec, px, c->err) : as_error_set(c->err, "out of memory");
    if (rc == AS_OK)
        rc = as_interp_set_pixels(s->it, st, px, (int)n, c->err);
    if (rc == AS_OK) {
        const char *slash = strrchr(c->argv[1], '/');
        snprintf(s->image, sizeof s->image, "%s", slash ? slash + 1 : c->argv[1]);
        char how[160] = "", turned[48] = "";
        if (orientation > 1)
            snprintf(turned, sizeof turned, ", EXIF orientation %d applied", orientation);
        if (spec->pil.on) {
            int rw, rh;
            as_pil_resize_size(&spec->pil, img.width, img.height, &rw, &rh);
            int n_ = 0;
            if (img.channels != spec->channels)
                n_ = snprintf(how, sizeof how, "%s", spec->channels == 1 ? ", made grey (PIL's L)" : ", made RGB");
            if (rw != img.width || rh != img.height)
                n_ += snprintf(how + n_, sizeof how - (size_t)n_, ", resized to %d x %d (PIL %s)", rw, rh,
                               as_pil_filter_name(spec->pil.resample));
            if (spec->pil.crop_w > 0 && (spec->pil.crop_w != rw || spec->pil.crop_h != rh))
                snprintf(how + n_, sizeof how - (size_t)n_, ", centre-cropped to %d x %d", spec->pil.crop_w,
                         spec->pil.crop_h);
        } else {
            bool resized = img.width != spec->size || img.height != spec->size;
            snprintf(how, sizeof how, "%s%s",
                     img.channels != spec->channels ? (spec->channels == 1 ? ", made grey" : ", made RGB") : "",
                     resized ? (spec->resize == AS_RESIZE_BILINEAR ? ", resized (bilinear)" : ", resized (nearest)")
                             : "");
        }
        char last[32];
        as_cmd_position_label(s, str->n_ctx - 1, last, sizeof last);
        fprintf(s->out, "image %s: %d x %d %s, %d-bit%s%s; %d positions: CLS, r0c0 .. %s\n", c->argv[1], img.width,
                img.height, img.channels == 1 ? "grey" : "RGB", img.maxval == 65535 ? 16 : 8, turned, how,
                str->n_ctx, last);
    }
    free(px);
    as_image_free(&img);
    return rc;
}

/* A classifier's top K classes, read at the program's logits position. */
int as_cmd_top_classes(cmd_ctx *c, long k)
{
    as_session *s = c->s;
    if (c->argc > 2)
        return as_error_set(c->err, "usage: top [K] (the classes at %s)", "CLS");
    if (s->it->out->n_tokens == 0)
        return as_error_set(c->err, "no image yet: give one with `image FILE`");
    const float *logits = as_interp_logits(s->it);
    if (!logits)
        return as_error_set(c->err, "no class logits yet: the pass is not finished (`finish` computes them)");
    int n = s->model->cfg.n_vocab;
    for (int i = 0; i < n; i++)
        if (!isfinite(logits[i]))
            return as_error_set(c->err, "class %d's logit is %g: no ranking (`weights` shows tensors holding NaN or Inf)",
                                i, logits[i]);
    as_probs(logits, n, s->probs);
    int m = as_top_indices(logits, n, (int)k, s->order);
    char at[32];
    as_cmd_position_label(s, s->prog->logits_pos, at, sizeof at);
    fprintf(s->out, "classes at %s:\nrank\tid\tclass\tprob\tlogit\n", at);
    for (int i = 0; i < m; i++) {
        char name[256];
        as_cmd_label(s, s->order[i], 0, name, sizeof name);
        fprintf(s->out, "%d\t%d\t%s\t%.6f\t%.4f\n", i + 1, s->order[i], name, s->probs[s->order[i]],
                logits[s->order[i]]);
    }
    return AS_OK;
}

/* rollout [FILE.npy|FILE.png|FILE.svg|FILE.pdf]: the rollout to [CLS]
 * over the patches, as a grid of percentages; FILE.npy gets the whole
 * [n][n] matrix (row q: position q's output; columns: the input positions
 * CLS, r0c0, ...); a figure file, the rollout through every layer laid
 * over the image (export overlay LAST rollout FILE, options after it). */
int as_cmd_rollout(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *path = c->argc >= 2 ? c->argv[1] : NULL, *kind = path ? as_cmd_output_kind(path) : NULL;
    if (kind && strcmp(kind, "npy")) {
        char last[16];
        snprintf(last, sizeof last, "%d", s->model->cfg.n_layer - 1);
        char **argv = calloc((size_t)c->argc + 3, sizeof *argv);
        if (!argv)
            return as_error_set(c->err, "out of memory");
        argv[0] = "export", argv[1] = "overlay", argv[2] = last, argv[3] = "rollout";
        for (int i = 1; i < c->argc; i++)
            argv[3 + i] = c->argv[i];
        cmd_ctx e = {s, argv, c->argc + 3, c->rest, c->err};
        int rc = as_cmd_export_overlay(&e);
        free(argv);
        return rc;
    }
    if (c->argc > 2)
        return as_error_set(c->err, "usage: rollout [FILE.npy|FILE.png|FILE.svg|FILE.pdf [key=value ...]]");
    if (path && !kind)
        return as_error_set(c->err, "rollout writes .npy (the [positions][positions] matrix) or a figure (.png, .svg, "
                                    ".pdf); '%s' is none of them", path);
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    int n = s->it->out->n_tokens;
    float *r = malloc((size_t)n * (size_t)n * sizeof *r);
    if (!r)
        return as_error_set(c->err, "out of memory");
    int rc = as_attn_rollout(s->cap, n, r, c->err);
    const as_stream *st = &s->prog->streams[s->prog->out_stream];
    int grid = st->input == AS_INPUT_PIXELS ? st->patch.grid : 0;
    if (rc == AS_OK && grid > 0 && 1 + grid * grid == n) {
        fprintf(s->out, "attention rollout to CLS (percent of its input from each patch; CLS itself %.1f%%):\n    ",
                100.0 * r[0]);
        for (int x = 0; x < grid; x++)
            fprintf(s->out, "%6s%d", "c", x);
        fputc('\n', s->out);
        for (int y = 0; y < grid; y++) {
            fprintf(s->out, "r%-3d", y);
            for (int x = 0; x < grid; x++)
                fprintf(s->out, "%7.2f", 100.0 * r[1 + y * grid + x]);
            fputc('\n', s->out);
        }
    } else if (rc == AS_OK) {
        fprintf(s->out, "attention rollout to position 0:\n");
        for (int k = 0; k < n; k++) {
            char lab[64];
            as_cmd_position_label(s, k, lab, sizeof lab);
            fprintf(s->out, "%d\t%s\t%.6f\n", k, lab, r[k]);
        }
    }
    if (rc == AS_OK && path) {
        size_t shape[2] = {(size_t)n, (size_t)n};
        rc = as_cmd_write_npy(s, path, AS_NPY_F32, r, shape, 2, "attention rollout (rows: outputs, columns: inputs)",
                              c->err);
    }
    free(r);
    return rc;
}
