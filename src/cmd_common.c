/* What the instrument commands share, in one place: rerunning the
 * context and side runs of other tokens, token and position arguments,
 * an output file among the arguments and the .npy it names, adding and
 * listing rules. Declared in session_internal.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/npy.h"
#include "session_internal.h"

int as_cmd_rerun(as_session *s, bool rules_off, as_cmd_reader read, void *ctx, as_error *err)
{
    as_interp *it = s->it;
    as_stop stop;
    as_interp_rules_off(it, rules_off);
    as_interp_reset(it); /* the same input, computed again from position 0 */
    int rc = as_cmd_run(s, AS_RUN_FINISH, 0, &stop, err);
    if (rc == AS_OK && stop == AS_STOP_INTERRUPT)
        rc = as_error_set(err, "interrupted");
    if (rc == AS_OK && read)
        rc = read(s, ctx, err);
    as_interp_rules_off(it, false);
    return rc;
}

bool as_cmd_interrupted(const as_session *s)
{
    return s->interrupt && *s->interrupt;
}

int as_cmd_side_run_new(as_session *s, const int32_t *ids, int n, size_t budget, as_side_run *r, as_error *err)
{
    as_stop stop;
    memset(r, 0, sizeof *r);
    if (as_capture_new(&r->cap, s->prog, budget, err) || as_interp_new(&r->it, s->prog, r->cap, err))
        return AS_ERR;
    r->it->interrupt = s->it->interrupt; /* Ctrl-C stops it too */
    if (as_interp_set_tokens(r->it, ids, n, err) || as_interp_run(r->it, AS_RUN_FINISH, 0, &stop, err))
        return AS_ERR;
    return stop == AS_STOP_INTERRUPT ? as_error_set(err, "interrupted") : AS_OK;
}

void as_cmd_side_run_free(as_side_run *r)
{
    as_interp_free(r->it);
    as_capture_free(r->cap);
}

/* A label as text output prints it ('·' for a space) back to its text:
 * a malloc'd copy, or NULL when it has no '·'. */
static char *label_text(const char *arg)
{
    if (!strstr(arg, "\xC2\xB7"))
        return NULL;
    char *t = strdup(arg), *o = t;
    for (const char *p = arg; t && *p; p++) {
        if (p[0] == '\xC2' && p[1] == '\xB7') {
            *o++ = ' ';
            p++;
        } else {
            *o++ = *p;
        }
    }
    if (t)
        *o = '\0';
    return t;
}

int as_cmd_parse_token(as_session *s, const char *arg, int32_t *out, as_error *err)
{
    char *text = label_text(arg);
    if (text) {
        int rc = as_cmd_parse_token(s, text, out, err);
        free(text);
        return rc;
    }
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg && !*end) {
        if (v < 0 || v >= s->model->cfg.n_vocab)
            return as_error_set(err, "token id %ld is outside the vocabulary (0..%d)", v, s->model->cfg.n_vocab - 1);
        *out = (int32_t)v;
        return AS_OK;
    }
    int32_t id = as_tokenizer_find(s->model->tok, arg);
    if (id >= 0) {
        *out = id;
        return AS_OK;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    if (as_tokenizer_encode(s->model->tok, arg, strlen(arg), false, &ids, &n, err))
        return AS_ERR;
    /* SentencePiece prepends a space; accept "▁word" as one token either way. */
    int rc = n == 1 ? (*out = ids[0], AS_OK)
                    : as_error_set(err, "'%s' is %zu tokens, not one (give a token id or a vocabulary piece)", arg, n);
    free(ids);
    return rc;
}

int as_cmd_parse_pos(as_session *s, const char *arg, int *pos, as_error *err)
{
    long v;
    for (int p = 0; p < s->it->out->n_tokens; p++) {
        as_position at;
        as_interp_position(s->it, s->prog->out_stream, p, &at);
        if (at.token < 0 && !strcmp(at.name, arg)) {
            *pos = p;
            return AS_OK;
        }
    }
    if (as_cmd_parse_long(arg, 0, s->it->out->n_tokens - 1, "the position", &v, err))
        return AS_ERR;
    *pos = (int)v;
    return AS_OK;
}

const float *as_cmd_final_logits(as_session *s, as_error *err)
{
    const float *l = as_interp_logits(s->it);
    if (!l)
        as_error_set(err, "no logits: run the pass first (`finish`)");
    return l;
}

as_npy_dtype as_cmd_hook_npy(const as_session *s, int hook, float *data, size_t count)
{
    if (s->prog->hooks[hook].dtype != AS_DT_I32)
        return AS_NPY_F32;
    for (size_t i = 0; i < count; i++) {
        /* exact small integers, unless an intervention wrote something else there */
        int32_t v = data[i] >= -2147483648.0f && data[i] < 2147483648.0f ? (int32_t)data[i] : -1;
        memcpy(&data[i], &v, sizeof v);
    }
    return AS_NPY_I32;
}

int as_cmd_write_npy(as_session *s, const char *path, as_npy_dtype dt, const void *data, const size_t *shape,
                     int ndim, const char *what, as_error *err)
{
    if (as_npy_write(path, dt, data, shape, ndim, err))
        return AS_ERR;
    fprintf(s->out, "wrote %s: [", path);
    for (int i = 0; i < ndim; i++)
        fprintf(s->out, i ? ", %zu" : "%zu", shape[i]);
    fprintf(s->out, "] %s, %s\n", dt == AS_NPY_F32 ? "float32" : "int32", what);
    return AS_OK;
}

as_out_arg as_cmd_output_arg(const cmd_ctx *c, int first)
{
    for (int i = first; i < c->argc; i++) {
        const char *k = as_cmd_output_kind(c->argv[i]);
        if (k)
            return (as_out_arg){i, i, c->argv[i], !strcmp(k, "npy")};
    }
    return (as_out_arg){-1, c->argc, NULL, false};
}

int as_cmd_add_rule(as_session *s, as_rule_kind kind, int hook, int head, int pos, const float *values,
                    bool per_position, const char *label, as_error *err)
{
    as_rule r = {.kind = kind, .hook = hook, .head = head, .pos = pos, .values = (float *)values,
                 .per_position = per_position};
    snprintf(r.label, sizeof r.label, "%s", label);
    return as_interp_add_rule(s->it, &r, (size_t)as_rule_len(s->it, &r), err);
}

int as_cmd_list_rules(cmd_ctx *c, bool watches)
{
    int shown = 0;
    for (int k = 0; k < c->s->it->n_rules; k++) {
        const as_rule *r = &c->s->it->rules[k];
        if ((r->kind == AS_RULE_WATCH) != watches)
            continue;
        fprintf(c->s->out, "%d\t%s\t%s\n", ++shown, c->s->prog->hooks[r->hook].name, r->label);
    }
    if (!shown)
        fprintf(c->s->out, watches ? "no watches\n" : "no ablations or patches\n");
    return AS_OK;
}

int as_cmd_lens_applies(const as_session *s, bool dla, as_error *err)
{
    const as_program *p = s->prog;
    const char *what = dla ? "direct logit attribution" : "the logit lens", *why = dla ? p->no_dla : p->no_lens;
    if (p->unembed < 0 || p->final_norm < 0)
        return as_error_set(err, "%s needs an unembedding, and %s has none (no output head over the vocabulary)",
                            what, s->model->cfg.name);
    if (why)
        return as_error_set(err, "%s does not apply to %s: %s", what, s->model->cfg.name, why);
    return AS_OK;
}

/* The bytes of one complete UTF-8 character at p (len left), 0 if broken. */
static size_t utf8_char(const unsigned char *p, size_t len)
{
    size_t n = p[0] < 0x80 ? 1 : (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || n > len || (n == 2 && p[0] < 0xC2))
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* One visible unit of a piece's bytes into unit (at most 7 bytes);
 * returns how many input bytes it stands for. */
static size_t label_unit(const unsigned char *b, size_t len, char *unit)
{
    size_t n = utf8_char(b, len);
    if (b[0] == ' ' || b[0] == '\n' || b[0] == '\t')
        strcpy(unit, b[0] == ' ' ? "\xC2\xB7" : b[0] == '\n' ? "\xE2\x86\xB5" : "\xE2\x87\xA5");
    else if (n == 0 || b[0] < 0x20 || b[0] == 0x7f || (b[0] == 0xC2 && b[1] < 0xA0))
        snprintf(unit, 8, "\\x%02X", b[0]), n = 1; /* C1 controls too: 0x9B is CSI to some terminals */
    else
        memcpy(unit, b, n), unit[n] = '\0';
    return n;
}

void as_cmd_label(const as_session *s, int32_t id, int width, char *out, size_t cap)
{
    char bytes[256];
    size_t len = as_tokenizer_token_bytes(s->model->tok, id, bytes, sizeof bytes), o = 0;
    /* A name standing for no text (a control token, a class) keeps its spaces: "Ankle boot". */
    bool named = len == 0;
    if (len == 0) {
        const char *p = as_tokenizer_piece(s->model->tok, id);
        len = (size_t)snprintf(bytes, sizeof bytes, "%s", p ? p : "?");
        len = len < sizeof bytes ? len : sizeof bytes - 1;
    }
    /* Columns are counted as characters: pieces are words, not wide scripts. */
    int cols = 0;
    out[0] = '\0';
    for (size_t i = 0; i < len;) {
        char unit[8];
        size_t used = named && bytes[i] == ' ' ? (strcpy(unit, " "), 1) : label_unit((const unsigned char *)bytes + i, len - i, unit);
        int w = unit[0] == '\\' ? 4 : 1;
        bool last = i + used >= len;
        if (width > 0 && cols + w > width - (last ? 0 : 1)) {
            if (o + 4 <= cap)
                strcpy(out + o, "\xE2\x80\xA6"); /* '…': the piece goes on */
            return;
        }
        if (o + strlen(unit) + 4 > cap)
            return;
        strcpy(out + o, unit);
        o += strlen(unit);
        cols += w;
        i += used;
    }
}

/* ---- non-finite values ---- */

void as_cmd_value_at(const as_program *prog, const as_capture *cap, int hook, int pos, int index, char *buf,
                     size_t n)
{
    const as_hook *h = &prog->hooks[hook];
    if (h->is_attn) {
        int len = as_capture_attn_keys(cap, hook, pos);
        len = len > 0 ? len : 1;
        snprintf(buf, n, "head %d, query %d, key %d", index / len, pos, index % len);
    } else if (h->n_dims > 1 && h->dims[1] > 0) {
        /* [pos, group, dim]: a hook of heads, or of a routed MLP's slots */
        const char *group = h->site == AS_SITE_SELF_ATTN || h->site == AS_SITE_CROSS_ATTN ? "head"
                            : h->site == AS_SITE_ROUTED_EXPERT                            ? "slot"
                                                                                          : "group";
        snprintf(buf, n, "position %d, %s %d, dim %d", pos, group, index / h->dims[1], index % h->dims[1]);
    } else {
        snprintf(buf, n, "position %d, index %d", pos, index);
    }
}

void as_cmd_first_nonfinite(const as_session *s, const char *lead, char *buf, size_t n)
{
    const as_nonfinite *nf = &s->it->nonfinite;
    *buf = '\0';
    if (!nf->found)
        return;
    char at[96];
    as_cmd_value_at(s->prog, s->cap, nf->hook, nf->pos, nf->index, at, sizeof at);
    snprintf(buf, n, "%s%s [%s] = %g", lead, s->prog->hooks[nf->hook].name, at, nf->value);
}

/* The first non-finite value of one position's row of a hook: its flat
 * index (as_nonfinite's), or -1. Attention rows: the keys the query sees. */
static int first_bad(const as_capture *cap, const as_hook *h, int hook, int pos, float *value)
{
    if (!h->is_attn) {
        const float *x = as_capture_row(cap, hook, pos);
        for (int j = 0; j < h->width; j++)
            if (!isfinite(x[j]))
                return *value = x[j], j;
        return -1;
    }
    int len = as_capture_attn_keys(cap, hook, pos), k0, k1;
    as_capture_attn_visible(cap, hook, pos, &k0, &k1);
    for (int head = 0; head < h->width; head++) {
        const float *x = as_capture_attn_row(cap, hook, head, pos, NULL);
        for (int k = k0; k < k1 && k < len; k++)
            if (!isfinite(x[k]))
                return *value = x[k], head * len + k;
    }
    return -1;
}

int as_cmd_refuse_at(as_session *s, const as_capture *cap, int hook, int pos, int index, float value,
                     const char *what, as_error *err)
{
    char at[96], first[256] = "";
    as_cmd_value_at(s->prog, cap, hook, pos, index, at, sizeof at);
    if (cap == s->cap)
        as_cmd_first_nonfinite(s, "; the first non-finite value of the pass is ", first, sizeof first);
    return as_error_set(err, "%s: %s holds %g at [%s]%s (`weights` shows which tensors hold NaN or Inf)", what,
                        s->prog->hooks[hook].name, value, at, first);
}

int as_cmd_check_finite(as_session *s, const as_capture *cap, int hook, int a, int b, const char *what,
                        as_error *err)
{
    const as_hook *h = &s->prog->hooks[hook];
    for (int p = a; p < b; p++) {
        float v;
        int j = first_bad(cap, h, hook, p, &v);
        if (j >= 0)
            return as_cmd_refuse_at(s, cap, hook, p, j, v, what, err);
    }
    return AS_OK;
}
