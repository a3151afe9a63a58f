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

/* ---- running the context, and what commands ask of it ---- */

void as_cmd_piece(const as_session *s, int32_t id, char *buf, size_t cap)
{
    const char *p = as_tokenizer_piece(s->model->tok, id);
    as_format_piece(p ? p : "", p ? strlen(p) : 0, buf, cap);
}

static void report_nonfinite(as_session *s)
{
    char first[256];
    as_cmd_first_nonfinite(s, "warning: first non-finite value in this pass: ", first, sizeof first);
    if (*first && s->warn)
        fprintf(s->warn, "%s\n", first);
}

/* What is in effect now, for the notes that say a pass was recomputed. */
static void describe_rules(const as_session *s, char *out, size_t cap)
{
    int n = 0;
    for (int k = 0; k < s->it->n_rules; k++)
        n += s->it->rules[k].kind != AS_RULE_WATCH;
    if (n == 0)
        snprintf(out, cap, "with no intervention");
    else
        snprintf(out, cap, "under the %d intervention%s in effect", n, n == 1 ? "" : "s");
}

int as_session_refresh(as_session *s, as_error *err)
{
    if (!as_interp_stale(s->it))
        return AS_OK;
    if (s->saved_run[0]) /* its weights are zero: computing would replace the saved values */
        return as_error_set(err, "this is a saved run of %s: computing the context again needs the model's weights",
                            s->model->path);
    int n;
    if (as_interp_refresh(s->it, &n, err))
        return AS_ERR;
    if (s->it->interrupt && *s->it->interrupt)
        return as_error_set(err, "interrupted while computing the pass again under the changed rules");
    char what[64];
    describe_rules(s, what, sizeof what);
    if (s->warn)
        fprintf(s->warn, "note: the interventions changed since this pass: its %d position%s computed again %s\n",
                n, n == 1 ? "" : "s", what);
    report_nonfinite(s);
    return AS_OK;
}

int as_cmd_run(as_session *s, as_run_mode mode, long count, as_stop *stop, as_error *err)
{
    if (s->saved_run[0])
        return as_error_set(err, "this is a saved run of %s: computing needs the model's weights", s->model->path);
    int was = s->cap->dropped_from;
    bool file_was = s->cap->file_failed;
    if (as_interp_stale(s->it) && !s->it->in_pass) {
        /* The whole context is computed again, and this run says so. */
        char what[64];
        describe_rules(s, what, sizeof what);
        if (s->warn && !s->it->rules_off)
            fprintf(s->warn, "note: the interventions changed since the last pass: computing it again from "
                    "position 0 %s\n", what);
        as_interp_reset(s->it);
    } else if (as_interp_stale(s->it) && as_session_refresh(s, err)) {
        return AS_ERR;
    }
    int rc = as_interp_run(s->it, mode, count, stop, err);
    /* a class the budget no longer holds at these positions: said once */
    if (s->cap->dropped_from >= 0 && s->cap->dropped_from != was && s->warn)
        fprintf(s->warn, "note: %s\n", s->cap->dropped);
    /* the capture file failed (disk full) on the way: the capture went on in RAM, said once */
    if (s->cap->file_failed && !file_was && s->warn)
        fprintf(s->warn, "warning: %s\n", s->cap->file_note);
    if (rc == AS_OK)
        report_nonfinite(s);
    return rc;
}

int as_cmd_require_tokens(as_session *s, as_error *err)
{
    int src = s->prog->source_stream;
    if (src >= 0 && s->it->st[src].n_tokens == 0)
        return as_error_set(err, "no source yet: %s translates a source sentence; start with `source TEXT` or "
                            "`source-ids ID ...` (the decoder's prefix, `prompt`, defaults to its start token)",
                            s->model->cfg.name);
    if (s->it->out->n_tokens == 0)
        return as_error_set(err, s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS
                                     ? "no image yet: start with `image FILE`"
                                     : "no context yet: start with `prompt TEXT` or `prompt-ids ID ...`");
    return AS_OK;
}

int as_cmd_find_hook(as_session *s, const char *name, as_error *err)
{
    int h = as_program_find_hook(s->prog, name);
    if (h < 0)
        return as_error_set(err, "no hook point named '%s' (`hooks` lists them)", name);
    return h;
}

/* Positions of a hook that hold values, with a message when there are none. */
int as_cmd_hook_positions(as_session *s, int h, as_error *err)
{
    const as_hook *hk = &s->prog->hooks[h];
    if (!as_capture_has(s->cap, h))
        return as_error_set(err, "%s is not captured: %s", hk->name,
                            s->cap->dropped[0] ? s->cap->dropped : "it was dropped");
    int n = s->cap->filled[h];
    if (n == 0)
        return as_error_set(err, "%s has no values yet: the interpreter has not reached it (try `finish`)",
                            hk->name);
    return n;
}

/* What the user should know before trusting the ids of a prompt: an
 * unknown pre-tokenizer, or bytes a byte-level vocabulary has no token for
 * (llama.cpp leaves them out, and so does the tokenizer; decoding the
 * plain-text ids then gives less than the text). */
void as_cmd_warn_tokens(as_session *s, const char *text)
{
    const as_tokenizer *t = s->model->tok;
    if (!s->warn)
        return;
    if (as_tokenizer_warning(t)[0])
        fprintf(s->warn, "warning: %s\n", as_tokenizer_warning(t));
    if (as_tokenizer_kind(t) != AS_TOK_GPT2)
        return;
    int32_t *ids = NULL;
    size_t n = 0, len = strlen(text), got = 0;
    char *back = NULL;
    as_error err;
    if (as_tokenizer_tokenize(t, text, len, 0, &ids, &n, &err) == AS_OK &&
        as_tokenizer_decode(t, ids, n, &back, &got, &err) == AS_OK && got < len)
        fprintf(s->warn, "warning: %zu bytes of the text have no token in this vocabulary and are left out "
                         "(as llama.cpp leaves them out)\n", len - got);
    free(ids);
    free(back);
}

/* Text -> ids as llama.cpp's llama_tokenize(add_special = true,
 * parse_special = !raw): BOS/EOS as the vocabulary wants them, and unless
 * raw, control tokens' texts (<|im_start|>, <s>) read as those tokens. */
int as_cmd_encode(as_session *s, const char *text, bool raw, int32_t **ids, size_t *n, as_error *err)
{
    const as_tokenizer *t = s->model->tok;
    /* A byte-level vocabulary (GPT-2's, a byte fallback) holds any byte;
     * WordPiece reads Unicode text, and would drop the bytes silently. */
    long bad = as_tokenizer_kind(t) == AS_TOK_BERT ? as_tokenizer_first_invalid_utf8(text, strlen(text)) : -1;
    if (bad >= 0)
        return as_error_set(err, "the text is not UTF-8 at byte %ld (0x%02X): %s's WordPiece vocabulary reads "
                            "Unicode text (is the terminal in another encoding? prompt-ids takes ids)", bad,
                            (unsigned char)text[bad], s->model->cfg.name);
    unsigned flags = AS_TOK_ADD_SPECIAL | (raw ? 0 : AS_TOK_PARSE_SPECIAL);
    if (as_tokenizer_tokenize(t, text, strlen(text), flags, ids, n, err))
        return AS_ERR;
    as_cmd_warn_tokens(s, text);
    return AS_OK;
}

/* Logits with a NaN or Inf rank nothing: say so, and where the pass first
 * went wrong (as the interpreter recorded it), rather than an empty table. */
int as_cmd_nonfinite_logits(as_session *s, const float *logits, int pos, as_error *err)
{
    int n = s->model->cfg.n_vocab, bad = 0;
    for (int i = 0; i < n; i++)
        bad += !isfinite(logits[i]);
    if (!bad)
        return AS_OK;
    char first[256];
    as_cmd_first_nonfinite(s, ". The first non-finite value of the pass is ", first, sizeof first);
    if (!*first)
        return as_error_set(err, "%d of the %d logits at position %d are NaN or Inf: no ranking", bad, n, pos);
    return as_error_set(err, "%d of the %d logits at position %d are NaN or Inf: no ranking%s; "
                             "`weights` shows which tensors hold NaN or Inf",
                        bad, n, pos, first);
}

bool as_cmd_is_encoder(const as_session *s)
{
    return !s->prog->streams[s->prog->out_stream].causal;
}

void as_cmd_position_label(const as_session *s, int pos, char *out, size_t cap)
{
    as_cmd_stream_label(s, s->prog->out_stream, pos, out, cap);
}

void as_cmd_stream_label(const as_session *s, int stream, int pos, char *out, size_t cap)
{
    as_position at;
    as_interp_position(s->it, stream, pos, &at);
    if (at.token >= 0)
        as_cmd_label(s, at.token, 0, out, cap);
    else
        snprintf(out, cap, "%s", at.name);
}

/* ---- routed MLPs ---- */

int as_cmd_expert_load(as_session *s, int layer, float *load, int *n_expert, int *n_pos, as_error *err)
{
    int h = as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, layer, s->prog->out_stream);
    const as_op *op = h >= 0 ? as_program_producer(s->prog, h) : NULL;
    if (!op)
        return as_error_set(err, "layer %d of %s has no experts (its MLP is dense)", layer, s->model->cfg.name);
    int n = as_cmd_hook_positions(s, h, err);
    if (n < 0)
        return AS_ERR;
    *n_expert = op->n_expert;
    *n_pos = n;
    for (int e = 0; e < op->n_expert; e++)
        load[e] = 0;
    for (int p = 0; p < n; p++) {
        const float *ix = as_capture_row(s->cap, h, p);
        for (int j = 0; j < op->k; j++) {
            int e = (int)ix[j];
            if (e >= 0 && e < op->n_expert)
                load[e] += 1.0f;
        }
    }
    for (int e = 0; e < op->n_expert; e++)
        load[e] /= (float)n;
    return AS_OK;
}

/* The distinct tokens expert e took over positions [0, n) of the
 * hook_expert_indices hook h, into ids/cnt (room for n each), the `top`
 * most frequent first (the earlier in the context among equals); the
 * times it was chosen in *chosen (may be NULL). Returns how many distinct. */
int as_cmd_expert_tokens(const as_session *s, int h, int e, int n, int top, int32_t *ids, int *cnt, int *chosen)
{
    const as_op *op = as_program_producer(s->prog, h);
    const int32_t *tokens = s->it->out->tokens;
    int nd = 0, times = 0;
    for (int p = 0; p < n; p++) {
        const float *ix = as_capture_row(s->cap, h, p);
        for (int j = 0; j < op->k; j++) {
            if ((int)ix[j] != e)
                continue;
            times++;
            int d = 0;
            while (d < nd && ids[d] != tokens[p])
                d++;
            if (d == nd)
                ids[nd] = tokens[p], cnt[nd++] = 0;
            cnt[d]++;
        }
    }
    for (int t = 0; t < top && t < nd; t++) {
        int best = t;
        for (int d = t + 1; d < nd; d++)
            if (cnt[d] > cnt[best])
                best = d;
        int32_t bi = ids[best];
        int bc = cnt[best];
        memmove(ids + t + 1, ids + t, (size_t)(best - t) * sizeof *ids);
        memmove(cnt + t + 1, cnt + t, (size_t)(best - t) * sizeof *cnt);
        ids[t] = bi, cnt[t] = bc;
    }
    if (chosen)
        *chosen = times;
    return nd;
}

char *as_session_capture_file(const as_session *s)
{
    const char *path = as_capture_file_path(s->cap);
    return path ? strdup(path) : NULL;
}

void as_session_carry_capture_file(as_session *s, char *file)
{
    as_error err = {{0}};
    if (file && as_capture_set_file(s->cap, file, &err) && s->warn)
        fprintf(s->warn, "warning: %s\n", err.msg);
    free(file);
}

int as_cmd_rebuild(as_session *s, unsigned opts, as_error *err)
{
    as_interp *old = s->it;
    if (old->n_rules > 0)
        return as_error_set(err, "%d rule%s (`ablations`, `watches`) name%s hooks of the program this rebuilds: "
                            "remove %s first (`unablate`, `unwatch`)", old->n_rules, old->n_rules == 1 ? "" : "s",
                            old->n_rules == 1 ? "s" : "", old->n_rules == 1 ? "it" : "them");
    as_program *prog;
    as_capture *cap = NULL;
    as_interp *it = NULL;
    if (as_program_build_opts(&prog, s->model, opts, err))
        return AS_ERR;
    if (as_capture_new(&cap, prog, s->capture_mb << 20, err) || as_interp_new(&it, prog, cap, err) ||
        (s->ctx > 0 && as_interp_set_ctx(it, s->ctx, err)))
        goto fail;
    for (int k = 0; k < prog->n_streams; k++) {
        const as_stream_state *o = &old->st[k];
        if (o->n_tokens == 0)
            continue;
        if (prog->streams[k].input == AS_INPUT_PIXELS) {
            const as_patch_spec *ps = &prog->streams[k].patch;
            if (o->pixels && as_interp_set_pixels(it, k, o->pixels, ps->channels * ps->size * ps->size, err))
                goto fail;
            continue;
        }
        bool typed = false;
        for (int i = 0; i < o->n_tokens; i++)
            typed = typed || o->types[i] != 0;
        if (as_interp_set_input(it, k, o->tokens, o->n_tokens, err) ||
            (typed && as_interp_set_types(it, k, o->types, o->n_tokens, err)))
            goto fail;
        it->st[k].n_prompt = o->n_prompt;
    }
    it->interrupt = old->interrupt;
    /* the capture file goes on for the new program (the old capture's removed with it first) */
    char *file = as_session_capture_file(s);
    as_interp_free(old);
    as_capture_free(s->cap);
    as_program_free(s->prog);
    s->prog = prog, s->cap = cap, s->it = it;
    s->prog_opts = opts;
    as_session_carry_capture_file(s, file);
    return AS_OK;
fail:
    as_interp_free(it);
    as_capture_free(cap);
    as_program_free(prog);
    return AS_ERR;
}

static const char *const run_dtype[] = {"f32", "f16", "bf16"};

int as_run_dtype_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, run_dtype[i]))
            return i;
    return -1;
}

const char *as_run_dtype_name(int dt)
{
    return dt >= 0 && dt < 3 ? run_dtype[dt] : "?";
}
