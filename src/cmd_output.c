/* What the commands' outputs share, depending on nothing but the
 * tokenizer: the kind of file a path names (.npy, .png, .svg, .pdf) and a
 * token as figures label it. Kept apart from the figures' skeleton so that
 * the commands that only name files (cmd_common.c, cmd_fill.c, ...) do not
 * depend on it. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "attnscope/figure.h"
#include "session_internal.h"

void as_cmd_token_label(const as_session *s, int32_t id, char *out, size_t cap)
{
    char bytes[256];
    size_t n = as_tokenizer_token_bytes(s->model->tok, id, bytes, sizeof bytes);
    if (n == 0) {
        /* Control tokens decode to nothing: show their vocabulary string. */
        const char *p = as_tokenizer_piece(s->model->tok, id);
        snprintf(bytes, sizeof bytes, "%s", p ? p : "?");
        n = strlen(bytes);
    }
    as_fig_visible_text(bytes, n, out, cap);
}

const char *as_cmd_output_kind(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return NULL;
    return !strcasecmp(dot, ".npy")   ? "npy"
           : !strcasecmp(dot, ".png") ? "png"
           : !strcasecmp(dot, ".svg") ? "svg"
           : !strcasecmp(dot, ".pdf") ? "pdf"
                                      : NULL;
}
