#include "attnscope/session.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/file.h"
#include "attnscope/npy.h"
#include "attnscope/hf.h"
#include "session_internal.h"

/* ---- construction ---- */

int as_session_from_model(as_session **out, as_model *m, size_t capture_mb, FILE *out_stream,
                          FILE *warn_stream, as_error *err)
{
    *out = NULL;
    as_session *s = calloc(1, sizeof *s);
    if (!s)
        return as_error_set(err, "out of memory");
    s->model = m;
    s->capture_mb = capture_mb;
    s->out = out_stream;
    s->warn = warn_stream;
    as_sampler_init(&s->sampler);
    s->probs = malloc((size_t)m->cfg.n_vocab * sizeof *s->probs);
    s->order = malloc((size_t)m->cfg.n_vocab * sizeof *s->order);
    if (!s->probs || !s->order) {
        as_error_set(err, "out of memory");
        goto fail;
    }
    if (as_program_build(&s->prog, m, err) || as_capture_new(&s->cap, s->prog, capture_mb << 20, err) ||
        as_interp_new(&s->it, s->prog, s->cap, err))
        goto fail;
    *out = s;
    return AS_OK;
fail:
    s->model = NULL; /* the caller keeps the model on failure */
    as_session_free(s);
    return AS_ERR;
}

int as_session_new(as_session **out, const char *model_path, size_t capture_mb, FILE *out_stream,
                   FILE *warn_stream, as_error *err)
{
    as_model *m;
    *out = NULL;
    if (as_model_load(&m, model_path, err))
        return AS_ERR;
    if (as_session_from_model(out, m, capture_mb, out_stream, warn_stream, err)) {
        as_model_free(m);
        return AS_ERR;
    }
    return AS_OK;
}

void as_session_free(as_session *s)
{
    if (!s)
        return;
    as_interp_free(s->it);
    as_capture_free(s->cap);
    as_program_free(s->prog);
    as_model_free(s->model);
    free(s->probs);
    free(s->order);
    free(s);
}

/* ---- parsing ---- */

char **as_split_commands(const char *line, int *n)
{
    size_t len = strlen(line);
    char **cmds = calloc(len / 2 + 2, sizeof *cmds);
    *n = 0;
    if (!cmds)
        return NULL;
    const char *start = line, *opened = NULL, *literal = NULL;
    char quote = 0;
    for (const char *p = line;; p++) {
        if (!*p && quote) {
            /* A quote never closed is text (dialogue: `prompt "Yes, said
             * he`), so it protects no ';': scan again from just past it. */
            literal = opened;
            quote = 0;
            p = opened;
            continue;
        }
        if (*p && quote) {
            if (*p == '\\' && quote == '"' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
            continue;
        }
        if ((*p == '"' || *p == '\'') && p != literal) {
            quote = *p;
            opened = p;
            continue;
        }
        if (*p && *p != ';')
            continue;
        const char *a = start, *b = p;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (b > a && !(cmds[(*n)++] = strndup(a, (size_t)(b - a)))) {
            as_free_commands(cmds, *n - 1);
            *n = 0;
            return NULL; /* out of memory: no command rather than a NULL one */
        }
        if (!*p)
            break;
        start = p + 1;
    }
    return cmds;
}

void as_free_commands(char **cmds, int n)
{
    for (int i = 0; i < n; i++)
        free(cmds[i]);
    free(cmds);
}

static int hexval(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
}

/* Reads one word at *pp into out (which has room for strlen(*pp)+1). */
static int read_word(const char **pp, char *out, as_error *err)
{
    const char *p = *pp;
    char quote = 0;
    while (*p && (quote || !isspace((unsigned char)*p))) {
        if (!quote && (*p == '"' || *p == '\'')) {
            quote = *p++;
            continue;
        }
        if (quote && *p == quote) {
            quote = 0;
            p++;
            continue;
        }
        if (quote == '"' && *p == '\\' && p[1]) {
            p++;
            switch (*p) {
            case 'n': *out++ = '\n'; break;
            case 't': *out++ = '\t'; break;
            case 'r': *out++ = '\r'; break;
            case 'x':
                if (hexval((unsigned char)p[1]) >= 0 && hexval((unsigned char)p[2]) >= 0) {
                    *out++ = (char)(hexval((unsigned char)p[1]) * 16 + hexval((unsigned char)p[2]));
                    p += 2;
                } else {
                    *out++ = 'x'; /* not an escape: keep it */
                }
                break;
            default: *out++ = *p;
            }
            p++;
            continue;
        }
        *out++ = *p++;
    }
    *out = '\0';
    if (quote)
        return as_error_set(err, "unterminated %c quote", quote);
    *pp = p;
    return AS_OK;
}

int as_split_words(const char *line, char ***words, int *n, as_error *err)
{
    size_t len = strlen(line);
    char **w = calloc(len / 2 + 2, sizeof *w);
    *n = 0;
    *words = NULL;
    if (!w)
        return as_error_set(err, "out of memory");
    const char *p = line;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *buf = malloc(len + 1);
        if (!buf || read_word(&p, buf, err)) {
            free(buf);
            as_free_commands(w, *n);
            *n = 0;
            return buf ? AS_ERR : as_error_set(err, "out of memory");
        }
        w[(*n)++] = buf;
    }
    *words = w;
    return AS_OK;
}

/* The text argument of `prompt`/`tokenize`: one quoted word (quotes
 * removed, escapes read), or else the rest of the line taken literally, so
 * `prompt Hello, world` needs no quotes and dialogue that opens with a
 * quote (`prompt "Yes," said he.`) keeps its quotes. */
static char *text_arg(const char *rest, as_error *err)
{
    while (isspace((unsigned char)*rest))
        rest++;
    if (*rest == '"' || *rest == '\'') {
        char *buf = malloc(strlen(rest) + 1);
        const char *p = rest;
        as_error ignored;
        if (!buf) {
            as_error_set(err, "out of memory");
            return NULL;
        }
        if (read_word(&p, buf, &ignored) == AS_OK) {
            while (isspace((unsigned char)*p))
                p++;
            if (!*p)
                return buf;
        }
        free(buf);
    }
    return strdup(rest);
}

/* Commands whose argument is text taken as typed: their line need not
 * split into words (an unmatched quote in dialogue is text). */
static bool takes_text(const char *line, size_t len)
{
    static const char *const names[] = {"prompt", "prompt-raw", "tokenize", "tokenize-raw", "source"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(line, names[i], len))
            return true;
    return false;
}

void as_format_piece(const char *bytes, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)bytes[i];
        int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        bool valid = n > 0 && i + (size_t)n <= len && (n == 1 || c >= 0xC2);
        for (int k = 1; valid && k < n; k++)
            valid = ((unsigned char)bytes[i + (size_t)k] & 0xC0) == 0x80;
        if (valid && c == 0xC2 && (unsigned char)bytes[i + 1] < 0xA0)
            valid = false; /* U+0080..U+009F: C1 controls (0x9B is CSI to some terminals) */
        if (c == '\n')
            o += (size_t)snprintf(out + o, cap - o, "\\n");
        else if (c == '\t')
            o += (size_t)snprintf(out + o, cap - o, "\\t");
        else if (c == '\\')
            o += (size_t)snprintf(out + o, cap - o, "\\\\");
        else if (c < 0x20 || c == 0x7f || !valid)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02X", c);
        else if (o + (size_t)n < cap) {
            memcpy(out + o, bytes + i, (size_t)n);
            o += (size_t)n;
            i += (size_t)n - 1;
        }
    }
    out[o < cap ? o : cap - 1] = '\0';
}

/* ---- helpers for commands ---- */

int as_cmd_parse_long(const char *str, long lo, long hi, const char *what, long *out, as_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(str, &end, 10);
    if (errno || end == str || *end || v < lo || v > hi)
        return as_error_set(err, "%s must be a whole number from %ld to %ld, not '%s'", what, lo, hi, str);
    *out = v;
    return AS_OK;
}

int as_cmd_parse_float(const char *str, double lo, double hi, const char *what, double *out, as_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(str, &end);
    if (errno || end == str || *end || !(v >= lo && v <= hi))
        return as_error_set(err, "%s must be a number from %g to %g, not '%s'", what, lo, hi, str);
    *out = v;
    return AS_OK;
}

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

static void print_op(as_session *s, const char *lead, int pc)
{
    const as_op *op = &s->prog->ops[pc];
    fprintf(s->out, "%sop %d/%d  %-34s %s\n", lead, pc + 1, s->prog->n_ops, s->prog->hooks[op->out].name,
            op->text);
}

void as_cmd_print_stop(as_session *s, as_stop stop, int last_pc)
{
    const as_interp *it = s->it;
    switch (stop) {
    case AS_STOP_IDLE:
        fprintf(s->out, "nothing to run: all %d tokens are processed (gen adds more)\n", it->out->n_tokens);
        return;
    case AS_STOP_PASS_END:
        if (s->prog->logits_pos >= 0) {
            char at[32];
            as_cmd_position_label(s, s->prog->logits_pos, at, sizeof at);
            fprintf(s->out, "pass over positions %d-%d complete: class logits ready at %s (top)\n", it->out->p0,
                    it->out->p0 + it->out->n - 1, at);
        } else if (as_cmd_is_encoder(s))
            fprintf(s->out, "pass over positions %d-%d complete: %s\n", it->out->p0, it->out->p0 + it->out->n - 1,
                    s->prog->unembed >= 0 ? "predictions ready at every position (fill, top)"
                    : s->prog->pooled >= 0 ? "the pooled vector is ready (embed)" : "hidden states ready");
        else {
            int src = s->prog->source_stream;
            if (src >= 0 && it->st[src].n > 0)
                fprintf(s->out, "encoder over source positions %d-%d, then ", it->st[src].p0,
                        it->st[src].p0 + it->st[src].n - 1);
            fprintf(s->out, "pass over positions %d-%d complete: logits ready at position %d\n", it->out->p0,
                    it->out->p0 + it->out->n - 1, it->out->n_done - 1);
        }
        return;
    case AS_STOP_BREAK:
        print_op(s, "breakpoint: ", last_pc);
        return;
    case AS_STOP_WATCH: {
        const as_watch_hit *w = &it->watch_hit;
        fprintf(s->out, "watch '%s': %s at position %d", it->rules[w->rule].label, s->prog->hooks[w->hook].name,
                w->pos);
        if (w->index >= 0)
            fprintf(s->out, ", index %d", w->index);
        fprintf(s->out, " = %g%s\n", w->value, w->index < 0 ? " (mean)" : "");
        return;
    }
    case AS_STOP_INTERRUPT:
        fprintf(s->out, "interrupted before op %d/%d\n", it->pc + 1, s->prog->n_ops);
        return;
    case AS_STOP_COUNT:
    case AS_STOP_BLOCK_END:
        print_op(s, "", last_pc);
        return;
    }
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
    int was = s->cap->dropped_from;
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

/* ---- commands ---- */

static int set_context(as_session *s, const int32_t *ids, int n, as_error *err)
{
    if (n == 0)
        return as_error_set(err, "the prompt is empty");
    if (as_interp_set_tokens(s->it, ids, n, err))
        return AS_ERR;
    fprintf(s->out, "context: %d tokens (nothing computed yet: step, next, finish or gen)\n", n);
    return AS_OK;
}

/* What the user should know before trusting the ids of a prompt: an
 * unknown pre-tokenizer, or bytes a byte-level vocabulary has no token for
 * (llama.cpp leaves them out, and so does the tokenizer; decoding the
 * plain-text ids then gives less than the text). */
static void warn_tokens(as_session *s, const char *text)
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
/* Offset of the first byte of text that is not well-formed UTF-8, or -1. */
static long first_invalid_utf8(const unsigned char *u)
{
    for (const unsigned char *p = u; *p;) {
        size_t k = *p < 0x80 ? 1 : *p >= 0xc2 && *p <= 0xdf ? 2 : *p >= 0xe0 && *p <= 0xef ? 3
                 : *p >= 0xf0 && *p <= 0xf4 ? 4 : 0;
        unsigned char lo = *p == 0xe0 ? 0xa0 : *p == 0xf0 ? 0x90 : 0x80;
        unsigned char hi = *p == 0xed ? 0x9f : *p == 0xf4 ? 0x8f : 0xbf;
        for (size_t i = 1; i < k; i++, lo = 0x80, hi = 0xbf)
            if (p[i] < lo || p[i] > hi)
                k = 0;
        if (k == 0)
            return (long)(p - u);
        p += k;
    }
    return -1;
}

int as_cmd_encode(as_session *s, const char *text, bool raw, int32_t **ids, size_t *n, as_error *err)
{
    const as_tokenizer *t = s->model->tok;
    /* A byte-level vocabulary (GPT-2's, a byte fallback) holds any byte;
     * WordPiece reads Unicode text, and would drop the bytes silently. */
    long bad = as_tokenizer_kind(t) == AS_TOK_BERT ? first_invalid_utf8((const unsigned char *)text) : -1;
    if (bad >= 0)
        return as_error_set(err, "the text is not UTF-8 at byte %ld (0x%02X): %s's WordPiece vocabulary reads "
                            "Unicode text (is the terminal in another encoding? prompt-ids takes ids)", bad,
                            (unsigned char)text[bad], s->model->cfg.name);
    unsigned flags = AS_TOK_ADD_SPECIAL | (raw ? 0 : AS_TOK_PARSE_SPECIAL);
    if (as_tokenizer_tokenize(t, text, strlen(text), flags, ids, n, err))
        return AS_ERR;
    warn_tokens(s, text);
    return AS_OK;
}

static int prompt(cmd_ctx *c, bool raw)
{
    const char *r = c->rest + strspn(c->rest, " \t");
    if (c->s->prog->streams[c->s->prog->out_stream].input == AS_INPUT_PIXELS)
        return as_error_set(c->err, "%s reads an image, not text: give it one with `image FILE`",
                            c->s->model->cfg.name);
    if (c->argc == 3 && (*r == '"' || *r == '\''))
        return as_cmd_prompt_pair(c, raw);
    char *text = text_arg(c->rest, c->err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!text)
        return AS_ERR;
    int rc;
    int32_t start = c->s->prog->start_token;
    if (c->s->prog->source_stream >= 0 && start >= 0) {
        /* An encoder-decoder's prompt is the decoder's prefix: its start
         * token, then the text's pieces without the tokenizer's own BOS or
         * EOS (T5's tokenizer would end the prefix with </s>). */
        rc = as_tokenizer_tokenize(c->s->model->tok, text, strlen(text), raw ? 0 : AS_TOK_PARSE_SPECIAL, &ids, &n,
                                   c->err);
        int32_t *all = rc == AS_OK ? malloc((n + 1) * sizeof *all) : NULL;
        if (rc == AS_OK && !all)
            rc = as_error_set(c->err, "out of memory");
        if (all) {
            all[0] = start;
            memcpy(all + 1, ids, n * sizeof *ids);
            warn_tokens(c->s, text);
            rc = set_context(c->s, all, (int)n + 1, c->err);
            free(all);
        }
    } else {
        rc = as_cmd_encode(c->s, text, raw, &ids, &n, c->err);
        if (rc == AS_OK)
            rc = set_context(c->s, ids, (int)n, c->err);
    }
    free(ids);
    free(text);
    return rc;
}

static int cmd_prompt(cmd_ctx *c) { return prompt(c, false); }
static int cmd_prompt_raw(cmd_ctx *c) { return prompt(c, true); }

/* The ids of `prompt-ids` and `source-ids` (malloc'd, argc - 1 of them),
 * each checked against the vocabulary; NULL after a message. */
static int32_t *parse_ids(cmd_ctx *c, const char *usage)
{
    if (c->argc < 2) {
        as_error_set(c->err, "usage: %s", usage);
        return NULL;
    }
    int32_t *ids = malloc((size_t)(c->argc - 1) * sizeof *ids);
    if (!ids) {
        as_error_set(c->err, "out of memory");
        return NULL;
    }
    for (int i = 1; i < c->argc; i++) {
        long v;
        if (as_cmd_parse_long(c->argv[i], 0, c->s->model->cfg.n_vocab - 1, "a token id", &v, c->err)) {
            free(ids);
            return NULL;
        }
        ids[i - 1] = (int32_t)v;
    }
    return ids;
}

static int cmd_prompt_ids(cmd_ctx *c)
{
    int32_t *ids = parse_ids(c, "prompt-ids ID [ID ...]");
    if (!ids)
        return AS_ERR;
    int rc = set_context(c->s, ids, c->argc - 1, c->err);
    free(ids);
    return rc;
}

/* The source of an encoder-decoder (the program's source stream): the
 * encoder's input. A decoder with no prefix yet starts from the start
 * token the file names. */
static int set_source(as_session *s, const int32_t *ids, int n, as_error *err)
{
    int src = s->prog->source_stream;
    if (n == 0)
        return as_error_set(err, "the source is empty");
    if (as_interp_set_input(s->it, src, ids, n, err))
        return AS_ERR;
    fprintf(s->out, "source: %d tokens", n);
    int32_t start = s->prog->start_token;
    if (s->it->out->n_tokens == 0 && start >= 0) {
        if (as_interp_set_tokens(s->it, &start, 1, err))
            return AS_ERR;
        char piece[64];
        as_cmd_label(s, start, 0, piece, sizeof piece);
        fprintf(s->out, "; the decoder starts from %s (id %d)", piece, start);
    }
    fprintf(s->out, " (nothing computed yet: step, next, finish or gen)\n");
    return AS_OK;
}

static int require_source_stream(cmd_ctx *c)
{
    if (c->s->prog->source_stream < 0)
        return as_error_set(c->err, "%s (%s) has no source: it is not an encoder-decoder, and `prompt` sets its "
                            "whole input", c->s->model->cfg.name, as_model_arch_name(c->s->model));
    return AS_OK;
}

static int cmd_source(cmd_ctx *c)
{
    if (require_source_stream(c))
        return AS_ERR;
    char *text = text_arg(c->rest, c->err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!text)
        return AS_ERR;
    int rc = as_cmd_encode(c->s, text, false, &ids, &n, c->err);
    if (rc == AS_OK)
        rc = set_source(c->s, ids, (int)n, c->err);
    free(ids);
    free(text);
    return rc;
}

static int cmd_source_ids(cmd_ctx *c)
{
    if (require_source_stream(c))
        return AS_ERR;
    int32_t *ids = parse_ids(c, "source-ids ID [ID ...]");
    if (!ids)
        return AS_ERR;
    int rc = set_source(c->s, ids, c->argc - 1, c->err);
    free(ids);
    return rc;
}

static int tokenize(cmd_ctx *c, bool raw)
{
    if (c->s->prog->streams[c->s->prog->out_stream].input == AS_INPUT_PIXELS)
        return as_error_set(c->err, "%s reads an image, not text: it has no tokenizer (`image FILE` gives it its input)",
                            c->s->model->cfg.name);
    char *text = text_arg(c->rest, c->err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!text)
        return AS_ERR;
    int rc = as_cmd_encode(c->s, text, raw, &ids, &n, c->err);
    for (size_t i = 0; rc == AS_OK && i < n; i++) {
        char piece[256];
        as_cmd_label(c->s, ids[i], 0, piece, sizeof piece);
        fprintf(c->s->out, "%d\t%s\n", ids[i], piece);
    }
    free(ids);
    free(text);
    return rc;
}

static int cmd_tokenize(cmd_ctx *c) { return tokenize(c, false); }
static int cmd_tokenize_raw(cmd_ctx *c) { return tokenize(c, true); }

static int cmd_step(cmd_ctx *c)
{
    long n = 1;
    as_stop stop;
    if (as_cmd_require_tokens(c->s, c->err))
        return AS_ERR;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, 1000000000L, "the op count", &n, c->err))
        return AS_ERR;
    int before = c->s->it->in_pass ? c->s->it->pc : 0;
    if (as_cmd_run(c->s, AS_RUN_STEP, n, &stop, c->err))
        return AS_ERR;
    /* `step N` lists each op it ran only when N is small; otherwise the last. */
    int last = c->s->it->in_pass ? c->s->it->pc - 1 : c->s->prog->n_ops - 1;
    if (stop == AS_STOP_COUNT && n <= 20)
        for (int pc = before; pc < last; pc++)
            print_op(c->s, "", pc);
    as_cmd_print_stop(c->s, stop, last);
    return AS_OK;
}

static int run_cmd(cmd_ctx *c, as_run_mode mode)
{
    as_stop stop;
    if (as_cmd_require_tokens(c->s, c->err) || as_cmd_run(c->s, mode, 0, &stop, c->err))
        return AS_ERR;
    int last = c->s->it->in_pass ? c->s->it->pc - 1 : c->s->prog->n_ops - 1;
    as_cmd_print_stop(c->s, stop, last);
    return AS_OK;
}

static int cmd_next(cmd_ctx *c) { return run_cmd(c, AS_RUN_NEXT); }
static int cmd_finish(cmd_ctx *c) { return run_cmd(c, AS_RUN_FINISH); }
static int cmd_continue(cmd_ctx *c) { return run_cmd(c, AS_RUN_CONTINUE); }

static int cmd_where(cmd_ctx *c)
{
    const as_interp *it = c->s->it;
    if (it->out->n_tokens == 0) {
        fprintf(c->s->out, "no context (prompt TEXT starts one)\n");
        return AS_OK;
    }
    if (it->in_pass) {
        int src = c->s->prog->source_stream;
        if (src >= 0 && it->st[src].n > 0)
            fprintf(c->s->out, "encoder over source positions %d-%d, then ", it->st[src].p0,
                    it->st[src].p0 + it->st[src].n - 1);
        fprintf(c->s->out, "pass over positions %d-%d, before ", it->out->p0, it->out->p0 + it->out->n - 1);
        print_op(c->s, "", it->pc);
    } else if (it->out->n_done < it->out->n_tokens) {
        fprintf(c->s->out, "%d of %d tokens processed; the next pass covers positions %d-%d\n",
                it->out->n_done, it->out->n_tokens, it->out->n_done, it->out->n_tokens - 1);
    } else {
        fprintf(c->s->out, "all %d tokens processed; logits ready at position %d\n", it->out->n_tokens,
                it->out->n_tokens - 1);
    }
    return AS_OK;
}

static int cmd_back(cmd_ctx *c)
{
    long n = 1;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, 1000000000L, "the op count", &n, c->err))
        return AS_ERR;
    if (as_interp_back(c->s->it, n, c->err))
        return AS_ERR;
    return cmd_where(c);
}

static int cmd_break(cmd_ctx *c, bool on)
{
    if (c->argc != 2)
        return as_error_set(c->err, "usage: %s HOOK (wildcards: blocks.*.attn.hook_pattern)", c->argv[0]);
    int n = as_interp_break(c->s->it, c->argv[1], on);
    if (n == 0)
        return as_error_set(c->err, "no hook point matches '%s' (`hooks` lists them)", c->argv[1]);
    fprintf(c->s->out, "%s on %d hook point%s\n", on ? "breakpoint set" : "breakpoint removed", n,
            n == 1 ? "" : "s");
    return AS_OK;
}

static int cmd_break_on(cmd_ctx *c) { return cmd_break(c, true); }
static int cmd_unbreak(cmd_ctx *c) { return cmd_break(c, false); }

/* Runs the pending pass to its end. Returns -1 on error, 1 if it stopped
 * early (breakpoint, watch, Ctrl-C; *why says which), else 0. */
static int settle(as_session *s, const char **why, as_error *err)
{
    as_stop stop = AS_STOP_IDLE;
    if ((s->it->in_pass || s->it->out->n_done < s->it->out->n_tokens) && as_cmd_run(s, AS_RUN_CONTINUE, 0, &stop, err))
        return -1;
    if (stop == AS_STOP_BREAK || stop == AS_STOP_WATCH || stop == AS_STOP_INTERRUPT) {
        as_cmd_print_stop(s, stop, s->it->pc - 1);
        *why = stop == AS_STOP_BREAK   ? "stopped at a breakpoint (continue, then gen again)"
               : stop == AS_STOP_WATCH ? "stopped by a watch (continue, then gen again)"
                                       : "interrupted";
        return 1;
    }
    if (stop == AS_STOP_PASS_END && s->on_pass)
        s->on_pass(s->on_pass_ctx, s);
    return 0;
}

/* What this gen's sampling is, for figures (probs-trace's caption): kept
 * with the context's generated tokens, "mixed" once gens differ. */
static void note_sampling(as_session *s, int start)
{
    const as_sampler *sm = &s->sampler;
    char now[128];
    if (sm->temp == 0)
        snprintf(now, sizeof now, "greedy (temperature 0)");
    else {
        char k[32] = "", p[32] = "";
        if (sm->top_k)
            snprintf(k, sizeof k, ", top-k %d", sm->top_k);
        if (sm->top_p < 1)
            snprintf(p, sizeof p, ", top-p %g", (double)sm->top_p);
        snprintf(now, sizeof now, "temperature %g%s%s", (double)sm->temp, k, p);
    }
    if (start > s->it->out->n_prompt && s->sampled[0] && strcmp(s->sampled, now))
        snprintf(s->sampled, sizeof s->sampled, "settings that changed between gens");
    else if (start <= s->it->out->n_prompt || !s->sampled[0])
        snprintf(s->sampled, sizeof s->sampled, "%s", now);
}

static int cmd_gen(cmd_ctx *c)
{
    as_session *s = c->s;
    long n = 1;
    if (as_cmd_is_encoder(s) && s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS)
        return as_error_set(c->err, "%s classifies an image: every patch sees every other and there is no next "
                            "token to generate (top lists the classes at CLS; image FILE gives another image)",
                            s->model->cfg.name);
    if (as_cmd_is_encoder(s))
        return as_error_set(c->err, "%s is an encoder: every position sees every other, so there is no next token "
                            "to generate (fill predicts masked ones; embed gives its vector)", s->model->cfg.name);
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, 1000000, "the token count", &n, c->err))
        return AS_ERR;
    int start = s->it->out->n_tokens;
    const char *why = NULL;
    bool eos = false;
    note_sampling(s, start);
    for (long i = 0; i < n && !why; i++) {
        int st = settle(s, &why, c->err);
        if (st < 0)
            return AS_ERR;
        if (st > 0)
            break;
        int32_t tok;
        if (as_sampler_pick(&s->sampler, as_interp_logits(s->it), s->model->cfg.n_vocab, s->probs,
                            s->order, &tok, c->err))
            return AS_ERR;
        if (s->it->out->n_tokens >= s->it->n_ctx) {
            why = "stopped: the context is full";
            break;
        }
        as_interp_append(s->it, tok, c->err);
        if (tok == as_tokenizer_eos(s->model->tok)) {
            why = "stopped: end-of-sequence token";
            eos = true;
        }
    }
    /* The last token is computed like any other, the end-of-sequence token
     * too: the view then shows its attention rather than a position with
     * nothing computed yet. */
    if ((!why || eos) && settle(s, &why, c->err) < 0)
        return AS_ERR;
    char *text = NULL;
    size_t len = 0;
    int count = s->it->out->n_tokens - start;
    if (as_tokenizer_decode(s->model->tok, s->it->out->tokens + start, (size_t)count, &text, &len, c->err))
        return AS_ERR;
    char shown[4096];
    as_format_piece(text, len, shown, sizeof shown);
    fprintf(s->out, "generated: %s\nids:", shown);
    for (int i = start; i < s->it->out->n_tokens; i++)
        fprintf(s->out, " %d", s->it->out->tokens[i]);
    fprintf(s->out, "\n");
    if (why)
        fprintf(s->out, "%s (%d tokens in context, limit %d)\n", why, s->it->out->n_tokens, s->it->n_ctx);
    free(text);
    return AS_OK;
}

static int cmd_set(cmd_ctx *c)
{
    as_sampler *sm = &c->s->sampler;
    double v;
    long k;
    if (c->argc == 1) {
        fprintf(c->s->out, "temp = %g%s\ntopk = %d%s\ntopp = %g%s\nseed = %llu\nthreads = %d\n", (double)sm->temp,
                sm->temp == 0 ? " (greedy: the most probable token)" : "", sm->top_k, sm->top_k ? "" : " (off)",
                (double)sm->top_p, sm->top_p >= 1 ? " (off)" : "", (unsigned long long)sm->seed, as_get_threads());
        fprintf(c->s->out, "ctx = %d%s\n", c->s->it->n_ctx,
                c->s->ctx > 0 && c->s->it->n_ctx < c->s->model->cfg.n_ctx ? "" : " (the model's window)");
        return AS_OK;
    }
    if (c->argc != 3)
        return as_error_set(c->err, "usage: set (lists the settings) | set temp X | topk K | topp P | seed S | threads N"
                                    " | ctx N");
    const char *key = c->argv[1], *val = c->argv[2];
    if (!strcmp(key, "temp")) {
        if (as_cmd_parse_float(val, 0, 100, "temp", &v, c->err))
            return AS_ERR;
        sm->temp = (float)v;
    } else if (!strcmp(key, "topk")) {
        if (as_cmd_parse_long(val, 0, c->s->model->cfg.n_vocab, "topk", &k, c->err))
            return AS_ERR;
        sm->top_k = (int)k;
    } else if (!strcmp(key, "topp")) {
        char *end;
        errno = 0;
        v = strtod(val, &end);
        if (errno || end == val || *end || !(v > 0 && v <= 1))
            return as_error_set(c->err, "topp must be a number in (0, 1] (above 0, at most 1; 1 turns it off), "
                                "not '%s'", val);
        sm->top_p = (float)v;
    } else if (!strcmp(key, "seed")) {
        if (as_cmd_parse_long(val, 0, 0x7fffffffL, "seed", &k, c->err))
            return AS_ERR;
        as_sampler_seed(sm, (uint64_t)k);
    } else if (!strcmp(key, "threads")) {
        if (as_cmd_parse_long(val, 1, 256, "threads", &k, c->err))
            return AS_ERR;
        as_set_threads((int)k);
    } else if (!strcmp(key, "ctx")) {
        if (as_cmd_parse_long(val, 0, 1L << 30, "ctx", &k, c->err) || as_interp_set_ctx(c->s->it, (int)k, c->err))
            return AS_ERR;
        c->s->ctx = (int)k;
        fprintf(c->s->out, "ctx = %d%s\n", c->s->it->n_ctx,
                c->s->it->n_ctx < c->s->model->cfg.n_ctx ? "" : " (the model's window)");
        return AS_OK;
    } else {
        return as_error_set(c->err, "unknown setting '%s' (temp, topk, topp, seed, threads, ctx)", key);
    }
    fprintf(c->s->out, "%s = %s\n", key, val);
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

static int cmd_top(cmd_ctx *c)
{
    as_session *s = c->s;
    long k = 10;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, s->model->cfg.n_vocab, "K", &k, c->err))
        return AS_ERR;
    if (s->prog->logits_pos >= 0)
        return as_cmd_top_classes(c, k);
    if (as_cmd_is_encoder(s))
        return as_cmd_top_encoder(c, k);
    if (c->argc > 3)
        return as_error_set(c->err, "usage: top [K] [POS] (the next token after POS, the last position by default)");
    /* POS: the logits there (the next token after it), as the capture kept them */
    int pos = s->it->out->n_tokens - 1;
    if (c->argc > 2 && (as_cmd_require_tokens(s, c->err) || as_cmd_parse_pos(s, c->argv[2], &pos, c->err)))
        return AS_ERR;
    const float *logits = pos == s->it->out->n_tokens - 1 ? as_interp_logits(s->it) : as_cmd_logits_at(s, pos, c->err);
    if (!logits) {
        if (pos < s->it->out->n_tokens - 1 || as_cmd_require_tokens(s, c->err))
            return AS_ERR;
        return as_error_set(c->err, "no logits yet at position %d: the pass is not finished (`finish` computes them)",
                            pos);
    }
    int n = s->model->cfg.n_vocab;
    if (as_cmd_nonfinite_logits(s, logits, pos, c->err))
        return AS_ERR;
    as_probs(logits, n, s->probs);
    int m = as_top_indices(logits, n, (int)k, s->order);
    fprintf(s->out, "next token after position %d:\nrank\tid\tpiece\tprob\tlogit\n", pos);
    for (int i = 0; i < m; i++) {
        char piece[256];
        as_cmd_label(s, s->order[i], 0, piece, sizeof piece);
        fprintf(s->out, "%d\t%d\t%s\t%.6f\t%.4f\n", i + 1, s->order[i], piece, s->probs[s->order[i]],
                logits[s->order[i]]);
    }
    return AS_OK;
}

void as_cmd_format_shape(const as_session *s, int h, int n_pos, char *buf, size_t cap)
{
    size_t shape[3];
    int nd = as_capture_shape(s->cap, h, n_pos, shape);
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < nd && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%zu", i ? ", " : "", shape[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

static int cmd_hooks(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *pattern = c->argc > 1 ? c->argv[1] : "*";
    int matched = 0;
    for (int h = 0; h < s->prog->n_hooks; h++)
        matched += as_hook_name_match(pattern, s->prog->hooks[h].name);
    if (!matched)
        return as_error_set(c->err, "no hook matches '%s' (* is the only wildcard: `hooks blocks.0.*` lists block "
                            "0's, `hooks` every hook)", pattern);
    for (int h = 0; h < s->prog->n_hooks; h++) {
        if (!as_hook_name_match(pattern, s->prog->hooks[h].name))
            continue;
        char shape[64];
        as_cmd_format_shape(s, h, s->it->st[s->prog->hooks[h].stream].n_tokens, shape, sizeof shape);
        fprintf(s->out, "%s\t%s%s\n", s->prog->hooks[h].name, shape,
                as_capture_has(s->cap, h) ? "" : "\t(not captured)");
    }
    return AS_OK;
}

typedef struct moments {
    double sum, sq;
    float mn, mx;
    size_t n, nan, inf;
} moments;

static void add_values(moments *m, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) {
            m->nan++;
            continue;
        }
        if (isinf(x[i])) {
            m->inf++;
            continue;
        }
        if (m->n == 0 || x[i] < m->mn)
            m->mn = x[i];
        if (m->n == 0 || x[i] > m->mx)
            m->mx = x[i];
        m->sum += x[i];
        m->sq += (double)x[i] * x[i];
        m->n++;
    }
}

/* The hook named by argv[1] (with argc checked against `want`) and how
 * many positions it holds; AS_ERR with a message when it holds none. */
static int captured_arg(cmd_ctx *c, int want, const char *usage, int *h, int *n)
{
    if (c->argc != want)
        return as_error_set(c->err, "usage: %s", usage);
    *h = as_cmd_find_hook(c->s, c->argv[1], c->err);
    *n = *h < 0 ? -1 : as_cmd_hook_positions(c->s, *h, c->err);
    return *n < 0 ? AS_ERR : AS_OK;
}

static int cmd_stats(cmd_ctx *c)
{
    as_session *s = c->s;
    int h = -1, n = 0;
    if (captured_arg(c, 2, "stats HOOK", &h, &n))
        return AS_ERR;
    const as_hook *hk = &s->prog->hooks[h];
    moments m = {0};
    for (int q = 0; q < n; q++) {
        if (!hk->is_attn) {
            add_values(&m, as_capture_row(s->cap, h, q), (size_t)hk->width);
            continue;
        }
        /* Only the keys the query sees: hidden ones are -inf/0 by definition. */
        int k0, k1;
        as_capture_attn_visible(s->cap, h, q, &k0, &k1);
        for (int head = 0; head < hk->width; head++)
            add_values(&m, as_capture_attn_row(s->cap, h, head, q, NULL) + k0, (size_t)(k1 - k0));
    }
    double mean = m.n ? m.sum / (double)m.n : 0, var = m.n ? m.sq / (double)m.n - mean * mean : 0;
    char shape[64];
    as_cmd_format_shape(s, h, n, shape, sizeof shape);
    fprintf(s->out, "%s %s: min %.6g max %.6g mean %.6g std %.6g nan %zu inf %zu\n", hk->name, shape,
            (double)m.mn, (double)m.mx, mean, sqrt(var > 0 ? var : 0), m.nan, m.inf);
    return AS_OK;
}

/* A norm's statistics per position (and per head, for a norm of each
 * head: q and k norms). */
static void print_norm_table(as_session *s, int h, const char *title)
{
    int n = s->cap->filled[h], G = s->prog->hooks[h].width;
    bool rms = as_program_producer(s->prog, h)->norm == AS_NORM_RMS;
    fprintf(s->out, "%s (%s%s) over %d tokens\npos\ttoken\t%smean\t%s\tscale\tmin\tmax\ttop dims\n", title,
            rms ? "RMSNorm" : "LayerNorm", G > 1 ? ", per head" : "", n, G > 1 ? "head\t" : "", rms ? "rms" : "std");
    for (int q = 0; q < n; q++) { /* an encoder-decoder's encoder norms: the source's positions */
        char piece[64];
        as_cmd_stream_label(s, s->prog->hooks[h].stream, q, piece, sizeof piece);
        for (int g = 0; g < G; g++) {
            const as_norm_stat *st = as_capture_norm_group(s->cap, h, q, g);
            fprintf(s->out, "%d\t%s\t", q, piece);
            if (G > 1)
                fprintf(s->out, "%d\t", g);
            fprintf(s->out, "%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t", st->mean, sqrt(st->var), st->scale, st->min, st->max);
            for (int k = 0; k < AS_NORM_TOP && st->top_dim[k] >= 0; k++)
                fprintf(s->out, "%s%d:%.3g", k ? " " : "", st->top_dim[k], st->top_val[k]);
            fprintf(s->out, "\n");
        }
    }
}

/* Every norm of a layer in the order the program runs them (ln1, the q
 * and k norms, ln1_post, ln2, ln2_post: whichever the architecture has). */
static int cmd_norms(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc != 2)
        return as_error_set(c->err, "usage: norms LAYER | norms final | norms embed");
    bool final = !strcmp(c->argv[1], "final");
    if (final || !strcmp(c->argv[1], "embed")) {
        /* the norm after the blocks (ln_final, an encoder's mlm_head.ln), or an encoder's embed.ln */
        int h = as_program_hook(s->prog, final ? AS_HK_LNF_SCALE : AS_HK_EMBED_LN_SCALE, -1);
        if (h < 0)
            return as_error_set(c->err, "%s has no %s norm", s->model->cfg.name,
                                final ? "final" : "embedding");
        if (as_cmd_hook_positions(s, h, c->err) < 0)
            return AS_ERR;
        char title[64];
        const char *name = s->prog->hooks[h].name, *dot = strrchr(name, '.');
        snprintf(title, sizeof title, "%.*s", (int)(dot - name), name);
        print_norm_table(s, h, title);
        return AS_OK;
    }
    long l;
    if (as_cmd_parse_long(c->argv[1], 0, s->model->cfg.n_layer - 1, "the layer", &l, c->err))
        return AS_ERR;
    int shown = 0;
    for (int o = 0; o < s->prog->n_ops; o++) {
        const as_op *op = &s->prog->ops[o];
        if (op->kind != AS_OP_NORM_SCALE || op->layer != (int)l)
            continue;
        if (shown == 0 && as_cmd_hook_positions(s, op->out, c->err) < 0)
            return AS_ERR;
        if (shown++ && s->cap->filled[op->out] == 0)
            continue;
        char title[64];
        const char *name = s->prog->hooks[op->out].name, *dot = strrchr(name, '.');
        snprintf(title, sizeof title, "%.*s", (int)(dot ? dot - name : (long)strlen(name)), name);
        print_norm_table(s, op->out, title);
    }
    return AS_OK;
}

static int cmd_dump(cmd_ctx *c)
{
    as_session *s = c->s;
    int h = -1, n = 0;
    if (c->argc >= 2 && !strcmp(c->argv[1], "all"))
        return as_cmd_dump_all(c);
    size_t len = c->argc == 3 ? strlen(c->argv[2]) : 0;
    if (c->argc == 3 && len == 0)
        return as_error_set(c->err, "usage: dump HOOK FILE.npy | dump all DIR (the file name is empty)");
    if (c->argc == 3 && (len < 5 || strcmp(c->argv[2] + len - 4, ".npy")))
        return as_error_set(c->err, "%s: dump writes NumPy arrays only: the file name must end in .npy", c->argv[2]);
    if (captured_arg(c, 3, "dump HOOK FILE.npy", &h, &n))
        return AS_ERR;
    size_t shape[3], count = as_capture_count(s->cap, h, n);
    int nd = as_capture_shape(s->cap, h, n, shape);
    float *data = malloc(count * sizeof *data);
    if (!data)
        return as_error_set(c->err, "out of memory (%zu floats)", count);
    as_capture_copy(s->cap, h, n, data);
    as_npy_dtype dt = as_cmd_hook_npy(s, h, data, count);
    int rc = as_npy_write(c->argv[2], dt, data, shape, nd, c->err);
    free(data);
    if (rc == AS_OK) {
        char sh[64];
        as_cmd_format_shape(s, h, n, sh, sizeof sh);
        fprintf(s->out, "wrote %s: %s %s %s\n", c->argv[2], s->prog->hooks[h].name, sh,
                dt == AS_NPY_I32 ? "int32" : "float32");
    }
    return rc;
}

static int cmd_tokens(cmd_ctx *c)
{
    as_session *s = c->s;
    int src = s->prog->source_stream;
    if (s->it->out->n_tokens == 0 && (src < 0 || s->it->st[src].n_tokens == 0))
        return as_cmd_require_tokens(s, c->err);
    for (int i = 0; src >= 0 && i < s->it->st[src].n_tokens; i++) {
        char piece[256];
        as_cmd_label(s, s->it->st[src].tokens[i], 0, piece, sizeof piece);
        fprintf(s->out, "%d\t%d\t%s\tsource\n", i, s->it->st[src].tokens[i], piece);
    }
    bool pixels = s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS;
    for (int i = 0; i < s->it->out->n_tokens; i++) {
        char piece[256];
        as_cmd_position_label(s, i, piece, sizeof piece);
        if (pixels)
            fprintf(s->out, "%d\t%s\t%s\n", i, piece, i ? "patch" : "class token");
        else
            fprintf(s->out, "%d\t%d\t%s\t%s\n", i, s->it->out->tokens[i], piece,
                    i < s->it->out->n_prompt ? "prompt" : "generated");
    }
    return AS_OK;
}

static int cmd_info(cmd_ctx *c)
{
    const as_model *m = c->s->model;
    if (m->gguf)
        as_gguf_print_info(m->gguf, c->s->out);
    const as_capture *cap = c->s->cap;
    const as_interp *it = c->s->it;
    int in_use = 0;
    for (int st = 0; st < c->s->prog->n_streams; st++)
        in_use = it->st[st].n_tokens > in_use ? it->st[st].n_tokens : in_use;
    /* computed so far, and what the budget keeps for the whole context as it stands */
    int done = 0, pos[AS_MAX_STREAMS];
    for (int st = 0; st < c->s->prog->n_streams; st++) {
        done = it->st[st].n_done > done ? it->st[st].n_done : done;
        pos[st] = it->st[st].n_tokens;
    }
    fprintf(c->s->out, "capture: %zu MB budget, %.1f MB in use at %d computed position%s (%.1f MB of it the KV cache "
            "and norm statistics, which the budget does not count; storage grows with the positions in use)\n",
            c->s->capture_mb, (double)cap->used / (1 << 20), done, done == 1 ? "" : "s",
            (double)cap->essential / (1 << 20));
    char plan[512];
    as_capture_plan(cap, pos, plan, sizeof plan);
    fprintf(c->s->out, "capture at the context's %d position%s: %s\n", in_use, in_use == 1 ? "" : "s",
            plan[0] ? plan : "everything kept");
    fprintf(c->s->out, "context: %d of %d positions%s\n", it->out->n_tokens, it->n_ctx,
            it->n_ctx < c->s->prog->streams[c->s->prog->out_stream].n_ctx ? " (set ctx; the model's window is larger)"
                                                                          : " (the model's window)");
    /* a cache smaller than a plain multi-head one (MLA's latent): both, when the program says */
    const as_program *p = c->s->prog;
    long cached = 0, plain = 0;
    bool said = false;
    for (int a = 0; a < p->n_attn; a++) {
        const as_attn *s = &p->attn[a];
        long w = (long)p->hooks[s->k].width + p->hooks[s->v].width;
        cached += w;
        plain += s->plain_kv > 0 ? s->plain_kv : w;
        said = said || s->plain_kv > 0;
    }
    if (said)
        fprintf(c->s->out, "KV cache: %ld values a position over %d attention layers (%.1f KiB a token in float32); "
                "a plain multi-head cache of the same heads: %ld (%.1fx)\n", cached, p->n_attn, cached * 4 / 1024.0,
                plain, cached ? (double)plain / (double)cached : 0.0);
    return AS_OK;
}

static int cmd_help(cmd_ctx *c);

int as_session_load(as_session *s, const char *path, as_error *err)
{
    as_session *fresh;
    as_model *m;
    as_file_set_interrupt(s->interrupt); /* Ctrl-C stops a long read */
    int rc = as_model_load_with(&m, path, NULL, err);
    as_file_set_interrupt(NULL);
    if (rc)
        return AS_ERR;
    if (as_session_from_model(&fresh, m, s->capture_mb, s->out, s->warn, err)) {
        as_model_free(m);
        return AS_ERR;
    }
    if (s->ctx > 0 && as_interp_set_ctx(fresh->it, s->ctx, err)) {
        as_session_free(fresh);
        return AS_ERR;
    }
    as_session old = *s;
    s->model = fresh->model, s->prog = fresh->prog, s->cap = fresh->cap, s->it = fresh->it;
    s->probs = fresh->probs, s->order = fresh->order;
    s->has_metric = false;
    s->image[0] = 0;
    s->it->interrupt = old.it->interrupt;
    fresh->model = old.model, fresh->prog = old.prog, fresh->cap = old.cap, fresh->it = old.it;
    fresh->probs = old.probs, fresh->order = old.order;
    as_session_free(fresh);
    const as_config *cfg = &s->model->cfg;
    fprintf(s->out, "loaded %s: %s (%s, %d layers, %d heads, context %d); no context yet\n", path, cfg->name,
            as_model_arch_name(s->model), cfg->n_layer, cfg->n_head, cfg->n_ctx);
    if (s->model->warnings[0] && s->warn)
        fprintf(s->warn, "warning: %s: %s\n", path, s->model->warnings);
    return AS_OK;
}

static int cmd_convert(cmd_ctx *c)
{
    if (c->argc != 3)
        return as_error_set(c->err, "usage: convert DIR OUT.gguf");
    if (!as_hf_is_dir(c->argv[1]))
        return as_error_set(c->err, "%s: not a directory (convert reads a Hugging Face model directory)", c->argv[1]);
    char note[640];
    if (as_hf_to_gguf(c->argv[1], c->argv[2], note, sizeof note, c->err))
        return AS_ERR;
    fprintf(c->s->out, "wrote %s\n", c->argv[2]);
    if (note[0])
        fprintf(c->s->out, "note: %s\n", note);
    return AS_OK;
}

static int cmd_load(cmd_ctx *c)
{
    if (c->argc != 2)
        return as_error_set(c->err, "usage: load MODEL.gguf (or a llama2.c .bin with tokenizer.bin beside it)");
    return as_session_load(c->s, c->argv[1], c->err);
}

static int cmd_quit(cmd_ctx *c)
{
    c->s->quit = true;
    return AS_OK;
}

static const command commands[] = {
    {{"prompt", "prompt TEXT | prompt \"A\" \"B\"", "Tokenize TEXT and make it the context (no compute yet); <|im_start|>, <s>... are special tokens. Two quoted texts: a sentence pair [CLS] A [SEP] B [SEP], types 0 then 1.",
      "prompt \"It is a truth universally acknowledged\""}, cmd_prompt},
    {{"prompt-ids", "prompt-ids ID [ID ...]", "Set the context from token ids.", "prompt-ids 0 464 1310"},
     cmd_prompt_ids},
    {{"source", "source TEXT", "An encoder-decoder's source sentence: the encoder's input (prompt then sets the "
      "decoder's prefix, by default its start token).", "source \"Das Haus ist klein.\""}, cmd_source},
    {{"source-ids", "source-ids ID [ID ...]", "Set an encoder-decoder's source from token ids.", "source-ids 5 9 12"},
     cmd_source_ids},
    {{"tokenize", "tokenize TEXT", "Show how TEXT splits into tokens: id<TAB>piece lines.",
      "tokenize \"Mr. Darcy's\""}, cmd_tokenize},
    {{"prompt-raw", "prompt-raw TEXT", "Like prompt, but special tokens' texts (<|im_start|>, <s>) stay plain text.",
      "prompt-raw \"a literal <|im_start|>\""}, cmd_prompt_raw},
    {{"tokenize-raw", "tokenize-raw TEXT", "Like tokenize, but special tokens' texts stay plain text.",
      "tokenize-raw \"<s>\""}, cmd_tokenize_raw},
    {{"token-types", "token-types T [T ...]", "Set each token's type (BERT's segments: 0, then 1), one per token.",
      "token-types 0 0 0 1 1"}, as_cmd_token_types},
    {{"image", "image FILE", "Make an image (PNG, JPEG, PGM, PPM; a JPEG turned as its EXIF orientation says) the "
      "input of a vision model, resized and normalised as the model file says (a Hugging Face directory's "
      "preprocessor_config.json as transformers' PIL image processors do).", "image assets/fashion/sneaker.png"},
     as_cmd_image},
    {{"tokens", "tokens", "List the context: position, id, piece, prompt or generated (an image: CLS and its "
      "patches r0c0, r0c1, ...).", "tokens"},
     cmd_tokens},
    {{"step", "step [N]", "Run the next op (or N ops), stopping at breakpoints.", "step 5"}, cmd_step},
    {{"next", "next", "Run to the end of the current block.", "next"}, cmd_next},
    {{"finish", "finish", "Run the pass to the logits (ignores breakpoints).", "finish"}, cmd_finish},
    {{"continue", "continue", "Run until a breakpoint's hook is filled or the pass ends.", "continue"},
     cmd_continue},
    {{"back", "back [N]", "Go back one op (or N), restoring the captured state.", "back 3"}, cmd_back},
    {{"break", "break HOOK", "Stop after HOOK is filled; '*' matches anything.",
      "break blocks.*.attn.hook_pattern"}, cmd_break_on},
    {{"unbreak", "unbreak HOOK", "Remove breakpoints matching HOOK.", "unbreak blocks.*"}, cmd_unbreak},
    {{"where", "where", "Show the op the interpreter stands at.", "where"}, cmd_where},
    {{"gen", "gen [N]", "Generate N tokens (one pass per token, using the KV cache).", "gen 20"}, cmd_gen},
    {{"set", "set [temp X | topk K | topp P | seed S | threads N | ctx N]",
      "Sampler and engine settings (temp 0 is greedy; ctx caps the context you work in, 0 for the "
      "model's window); `set` alone lists them.", "set temp 0.8"}, cmd_set},
    {{"top", "top [K] [POS]", "The next-token distribution after POS (the last position by default): rank, id, piece, probability, logit (an encoder: "
      "its predictions at POS, the last by default; a classifier: its classes at CLS).", "top 5"},
     cmd_top},
    {{"rollout", "rollout [FILE.npy|FILE.png|FILE.svg|FILE.pdf]", "Attention rollout (Abnar & Zuidema): per layer 0.5 * "
      "mean-over-heads pattern + 0.5 * I, rows renormalised, multiplied through the layers; printed for CLS over the "
      "patch grid, the matrix as .npy, or laid over the image as a figure.",
      "rollout rollout.npy"}, as_cmd_rollout},
    {{"fill", "fill [K] [POS]", "An encoder's masked-LM predictions at each [MASK] (or at POS): rank, id, piece, "
      "probability, logit.", "fill 5"}, as_cmd_fill},
    {{"embed", "embed [FILE.npy]", "The pooled vector of an embedding model (pooling as the file says).",
      "embed vec.npy"}, as_cmd_embed},
    {{"similarity", "similarity \"A\" \"B\"", "Cosine of the pooled vectors of two texts (each its own run).",
      "similarity \"a cat\" \"a dog\""}, as_cmd_similarity},
    {{"hooks", "hooks [PATTERN]", "Every hook point with its shape.", "hooks blocks.0.*"}, cmd_hooks},
    {{"stats", "stats HOOK", "Min, max, mean, std and NaN/Inf counts of a captured hook.",
      "stats blocks.2.hook_resid_post"}, cmd_stats},
    {{"norms", "norms LAYER|final|embed", "Per-token statistics of a layer's norms (mean, std or RMS, scale, "
      "min, max, largest dimensions); final: the norm after the blocks; embed: an encoder's embedding norm.",
      "norms 1"}, cmd_norms},
    {{"dump", "dump HOOK FILE.npy | dump all DIR", "Write a captured hook as a NumPy array (float32, or int32 "
      "for expert indices; C order) to FILE, whose name must end in .npy; `dump all`: every hook into DIR, plus "
      "index.json. A file is replaced whole or not at all, never a device, a FIFO or the loaded model's file.",
      "dump blocks.0.attn.hook_pattern pattern.npy"}, cmd_dump},
    {{"export", "export attn L H | grid L|all | lines L H|all | norms L|final | probs | probs-trace | "
      "overlay L H|mean|rollout|all | routing L | load | experts L  FILE.png|FILE.svg|FILE.pdf [key=value]",
      "Write a figure, one column (3.3 in) wide by default. Options: width=7in height=8cm font=PT dpi=N "
      "cmap=viridis|magma|gray scale=linear|log hide-bos=yes tokens=FROM:TO title=\"...\" top=K.",
      "export attn 0 1 head.pdf width=3.3in"}, as_cmd_export},
    {{"lens", "lens [POS] [FILE.npy] | lens table [FILE.npy]", "Logit lens: the final norm and unembedding applied after every layer.",
      "lens table"}, as_cmd_lens},
    {{"ablate", "ablate L.H zero|mean | ablate mlp L | ablate expert L.E",
      "Zero or mean-ablate a head's output (hook_z) or an MLP; zero a routed expert's output (the routing kept).",
      "ablate 1.3 zero"}, as_cmd_ablate},
    {{"route", "route L.E off", "The router of layer L may not choose expert E (the next best is taken); "
      "`unablate` removes it.", "route 1.3 off"}, as_cmd_route},
    {{"experts", "experts [LAYER]", "A routed MLP's experts over the context: each one's load (the share of tokens "
      "whose router chose it), times chosen, mean gate, and the tokens it took most often.", "experts 1"},
     as_cmd_experts},
    {{"unablate", "unablate", "Remove every ablation and patch.", "unablate"}, as_cmd_unablate},
    {{"ablations", "ablations", "List ablations and patches.", "ablations"}, as_cmd_ablations},
    {{"compare", "compare [TOKEN_A TOKEN_B]", "Rerun with and without ablations/patches: KL, top tokens, logit "
      "difference.", "compare"}, as_cmd_compare},
    {{"metric", "metric TOKEN_A TOKEN_B", "The logit difference compare and patch sweep report.",
      "metric \" Mary\" \" John\""}, as_cmd_metric},
    {{"patch", "patch HOOK from \"OTHER\" [pos=N] | patch sweep KIND from \"OTHER\" [FILE.npy|FILE.png|FILE.svg|FILE.pdf]",
      "Activation patching from another prompt of the same length; sweep over layers x positions (or heads), "
      "as an array or a heatmap figure.",
      "patch sweep resid_pre from \"The cat sat\""}, as_cmd_patch},
    {{"dla", "dla TOKEN [POS] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]", "Direct logit attribution: each head's and MLP's share of a token's logit.",
      "dla \" the\""}, as_cmd_dla},
    {{"heads", "heads [context] [threshold=X] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]", "Score every head: previous-token, first-token, duplicate, induction (and next-token on an encoder).",
      "heads"}, as_cmd_heads},
    {{"watch", "watch HOOK nan | watch HOOK max > X", "Stop continue/gen when a condition holds at a hook.",
      "watch blocks.*.ln1.hook_scale max > 50"}, as_cmd_watch},
    {{"unwatch", "unwatch", "Remove every watch.", "unwatch"}, as_cmd_unwatch},
    {{"watches", "watches", "List watches.", "watches"}, as_cmd_watches},
    {{"weights", "weights [PATTERN]", "Per-tensor statistics (and a histogram for one tensor).",
      "weights blk.0.*"}, as_cmd_weights},
    {{"diff", "diff OTHER.gguf|DIR", "Compare with another model (a GGUF file or a Hugging Face directory): "
      "tensors' values per tensor and per layer (NaN and Inf counted and located, block scales, shapes and types) "
      "and every metadata key (hyperparameters, vocabulary, merges, special ids).",
      "diff models/austen-gpt2-f16.gguf"}, as_cmd_diff},
    {{"load", "load MODEL", "Open another model in place of this one (a GGUF file, a Hugging Face directory, or a "
      "llama2.c checkpoint); a model that does not load leaves the current one.", "load models/induction.gguf"},
     cmd_load},
    {{"convert", "convert DIR OUT.gguf", "Write a Hugging Face directory (config.json, safetensors, tokenizer.json) "
      "as a GGUF file llama.cpp loads, its tensors in their stored types.", "convert ~/models/gpt2 gpt2.gguf"},
     cmd_convert},
    {{"info", "info", "The model card: hyperparameters, tensors, metadata, capture budget.", "info"},
     cmd_info},
    {{"help", "help [COMMAND]", "List the commands, or explain one.", "help break"}, cmd_help},
    {{"quit", "quit", "Leave attnscope.", "quit"}, cmd_quit},
};

#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

const as_command_info *as_command_at(int i)
{
    return i >= 0 && i < N_COMMANDS ? &commands[i].info : NULL;
}

static int cmd_help(cmd_ctx *c)
{
    for (int i = 0; i < N_COMMANDS; i++) {
        const as_command_info *in = &commands[i].info;
        if (c->argc > 1 && strcmp(c->argv[1], in->name))
            continue;
        if (c->argc > 1)
            fprintf(c->s->out, "%s\n  %s\n  example: %s\n", in->usage, in->help, in->example);
        else
            fprintf(c->s->out, "  %-28s %s\n", in->usage, in->help);
        if (c->argc > 1)
            return AS_OK;
    }
    if (c->argc > 1)
        return as_error_set(c->err, "no command '%s' (help lists them)", c->argv[1]);
    return AS_OK;
}

/* Commands that read nothing computed (they set input, rules or
 * settings, list what is there, or run the interpreter, which recomputes
 * a stale pass itself): the others see the pass recomputed first when the
 * interventions changed since it ran. */
static bool keeps_state(const char *name)
{
    static const char *const names[] = {"prompt", "prompt-ids", "source", "source-ids", "tokenize", "prompt-raw",
        "tokenize-raw", "token-types", "image", "tokens", "step", "next", "finish", "continue", "break", "unbreak",
        "where", "set", "hooks", "ablate", "route", "unablate", "ablations", "compare", "metric", "patch", "watch",
        "unwatch", "watches", "weights", "diff", "load", "convert", "info", "help", "quit"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

/* Commands with a fixed most of arguments: one more is refused with the
 * usage, never dropped silently (`gen 2 3` generated 2). */
static int too_many_args(const command *cmd, const cmd_ctx *c)
{
    static const struct {
        const char *name;
        int most;
    } limits[] = {{"finish", 0}, {"continue", 0}, {"next", 0}, {"where", 0}, {"tokens", 0}, {"unablate", 0},
                  {"ablations", 0}, {"watches", 0}, {"unwatch", 0}, {"info", 0}, {"quit", 0}, {"step", 1},
                  {"gen", 1}, {"back", 1}, {"weights", 1}, {"help", 1}, {"top", 2}, {"compare", 2}};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        if (strcmp(cmd->info.name, limits[i].name))
            continue;
        int most = limits[i].most;
        if (!strcmp(cmd->info.name, "compare") && c->argc == 2)
            return as_error_set(c->err, "usage: %s (the metric takes two tokens, or none to keep the one set)",
                                cmd->info.usage);
        if (c->argc - 1 > most)
            return as_error_set(c->err, "usage: %s (%s takes %s%d argument%s: '%s' is one too many)",
                                cmd->info.usage, cmd->info.name, most ? "at most " : "", most, most == 1 ? "" : "s",
                                c->argv[most + 1]);
        return AS_OK;
    }
    return AS_OK;
}

int as_session_exec(as_session *s, const char *line, as_error *err)
{
    cmd_ctx c = {s, NULL, 0, NULL, err};
    const char *word = line;
    while (isspace((unsigned char)*word))
        word++;
    size_t wlen = strcspn(word, " \t\n\r\f\v");
    if (as_split_words(line, &c.argv, &c.argc, err)) {
        if (!takes_text(word, wlen))
            return AS_ERR;
        /* `prompt "Yes, said he`: only the command word is a word. */
        char *name = strndup(word, wlen);
        char **one = name ? calloc(1, sizeof *one) : NULL;
        if (!one) {
            free(name);
            return as_error_set(err, "out of memory");
        }
        one[0] = name;
        c.argv = one;
        c.argc = 1;
        as_error_clear(err);
    }
    int rc = AS_OK;
    if (c.argc > 0 && c.argv[0][0] != '#' && !keeps_state(c.argv[0]) && as_session_refresh(s, err))
        rc = AS_ERR;
    else if (c.argc > 0 && c.argv[0][0] != '#') {
        const char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        while (*p && !isspace((unsigned char)*p))
            p++;
        c.rest = p;
        rc = as_error_set(err, "unknown command '%s' (help lists them)", c.argv[0]);
        for (int i = 0; i < N_COMMANDS; i++)
            if (!strcmp(c.argv[0], commands[i].info.name)) {
                as_error_clear(err);
                rc = too_many_args(&commands[i], &c) ? AS_ERR : commands[i].fn(&c);
                break;
            }
    }
    as_free_commands(c.argv, c.argc);
    return rc;
}
