/* A tokenizer built from a spec (as_tokenizer_new): the table of
 * algorithms chosen by tokenizer.ggml.model, the tokens' texts, scores and
 * types (with the types llama.cpp gives by text whatever the file says),
 * the hash tables filled, byte tokens, special tokens, the pre-tokenizer
 * and the pair template; and freeing it. */
#include "tokenizer_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A file without a vocabulary names its size (vocab_size): each id gets a
 * name, so a hostile size must not cost gigabytes. */
#define MAX_NONE_TOKENS (1 << 21)

/* ---------------------------------------------------------------- the algorithms */

/* One per tokenizer.ggml.model value, each in its own file. */
static const as_tok_algo *const ALGOS[] = {&as_tok_bpe, &as_tok_spm, &as_tok_wpm, &as_tok_ugm, &as_tok_none};
#define N_ALGOS (sizeof ALGOS / sizeof ALGOS[0])

static const as_tok_algo *algo_of_kind(as_tok_kind kind)
{
    for (size_t i = 0; i < N_ALGOS; i++)
        if (ALGOS[i]->kind == kind)
            return ALGOS[i];
    return NULL;
}

const as_tok_algo *as_tok_algo_named(const char *gguf_model)
{
    if (strcmp(gguf_model, "no_vocab") == 0) /* llama.cpp's other name for "none" */
        gguf_model = "none";
    for (size_t i = 0; i < N_ALGOS; i++)
        if (strcmp(ALGOS[i]->gguf_model, gguf_model) == 0)
            return ALGOS[i];
    return NULL;
}

/* "'gpt2' or 'llama'": the names the table knows, for the error. */
void as_tok_algo_names(char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ALGOS && k < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == N_ALGOS ? " or " : ", ";
        int m = snprintf(buf + k, cap - k, "%s'%s'", sep, ALGOS[i]->gguf_model);
        k += m > 0 ? (size_t)m : 0;
    }
}

/* ---------------------------------------------------------------- building */

static int check_id(const char *what, int32_t id, size_t n, as_error *err)
{
    if (id >= 0 && (size_t)id >= n)
        return as_error_set(err, "tokenizer: %s %d is out of range (vocabulary has %zu tokens)",
                            what, id, n);
    return AS_OK;
}

static int check_spec(const as_tokenizer_spec *sp, const as_tok_algo **algo, as_error *err)
{
    if (!sp)
        return as_error_set(err, "tokenizer: no spec given");
    if (!(*algo = algo_of_kind(sp->kind)))
        return as_error_set(err, "tokenizer: unknown kind %d", (int)sp->kind);
    if (sp->n_tokens == 0 || (!sp->tokens && sp->kind != AS_TOK_NONE))
        return as_error_set(err, "tokenizer: the vocabulary is empty");
    if (sp->n_tokens >= (size_t)INT32_MAX)
        return as_error_set(err, "tokenizer: %zu tokens is more than ids can number", sp->n_tokens);
    if (sp->kind == AS_TOK_NONE && sp->n_tokens > MAX_NONE_TOKENS)
        return as_error_set(err, "tokenizer: %zu token ids without a vocabulary is more than attnscope "
                                 "believes (at most %d; the largest vocabularies have about 260000)",
                            sp->n_tokens, MAX_NONE_TOKENS);
    if (sp->n_merges && !sp->merges)
        return as_error_set(err, "tokenizer: %zu merges announced but none given", sp->n_merges);
    if (check_id("bos_id", sp->bos_id, sp->n_tokens, err) ||
        check_id("eos_id", sp->eos_id, sp->n_tokens, err) ||
        check_id("unk_id", sp->unk_id, sp->n_tokens, err))
        return AS_ERR;
    return AS_OK;
}

/* No vocabulary: id i is named "#i". */
static int name_ids(as_tokenizer *t, as_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < t->n; i++)
        total += (size_t)snprintf(NULL, 0, "#%zu", i) + 1;
    if (!(t->arena = malloc(total)))
        return as_tok_oom(err);
    for (size_t i = 0, pos = 0; i < t->n; i++) {
        int k = snprintf(t->arena + pos, total - pos, "#%zu", i);
        t->off[i] = pos;
        t->len[i] = (uint32_t)k;
        pos += (size_t)k + 1;
    }
    return AS_OK;
}

static int copy_tokens(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    if (!sp->tokens)
        return name_ids(t, err);
    size_t total = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!sp->tokens[i])
            return as_error_set(err, "tokenizer: token %zu is NULL", i);
        uint64_t l = sp->token_lens ? sp->token_lens[i] : strlen(sp->tokens[i]);
        if (l >= UINT32_MAX || l + 1 > SIZE_MAX - total)
            return as_error_set(err, "tokenizer: token %zu is too long (%llu bytes)", i,
                                (unsigned long long)l);
        t->len[i] = (uint32_t)l;
        total += (size_t)l + 1;
    }
    if (!(t->arena = malloc(total)))
        return as_tok_oom(err);
    for (size_t i = 0, pos = 0; i < t->n; i++) {
        t->off[i] = pos;
        memcpy(t->arena + pos, sp->tokens[i], t->len[i]);
        t->arena[pos + t->len[i]] = '\0';
        pos += (size_t)t->len[i] + 1;
    }
    return AS_OK;
}

/* Without a token_type array: ids named unk are unknown, <0xNN> are byte
 * tokens where the algorithm falls back to them (llama), the rest normal
 * (BOS/EOS are made control afterwards). */
static uint8_t guess_type(const as_tokenizer *t, size_t i)
{
    uint8_t b;
    if ((int32_t)i == t->unk)
        return TT_UNKNOWN;
    if (t->algo->byte_fallback && as_tok_parse_byte_token(t->arena + t->off[i], t->len[i], &b))
        return TT_BYTE;
    return TT_NORMAL;
}

static bool text_is(const as_tokenizer *t, size_t i, const char *s)
{
    return as_tok_same_text(t, (int32_t)i, s, strlen(s));
}

static bool text_in(const as_tokenizer *t, size_t i, const char *const *list)
{
    for (; *list; list++)
        if (text_is(t, i, *list))
            return true;
    return false;
}

/* llama.cpp's loader makes tokens that look like the end of a turn, a
 * fill-in-the-middle marker or the end of generation control tokens
 * whatever the file says (its lists, by text), and gpt-oss's channel
 * markers user-defined. It makes only the first FIM marker of each kind
 * it meets (in hash order) control; here every one is. */
static void llama_cpp_types(as_tokenizer *t)
{
    static const char *const control[] = {
        /* end of generation (special_eog_ids), which holds the EOT and EOM lists */
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<｜end▁of▁sentence｜>", "[e~[",
        /* fill in the middle: prefix, suffix, middle, pad, repo, file separator */
        "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
        "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>",
        "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
        "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
        "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
        "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>",
        "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
        "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>", NULL,
    };
    static const char *const user[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    int32_t ret = -1, call = -1, end = -1, flush = -1, calls = -1, tool = -1, s_end = -1;
    for (size_t i = 0; i < t->n; i++) {
        if (text_in(t, i, control) && t->type[i] != TT_CONTROL)
            t->type[i] = TT_CONTROL;
        if (text_in(t, i, user))
            t->type[i] = TT_USER;
        ret = text_is(t, i, "<|return|>") ? (int32_t)i : ret;
        call = text_is(t, i, "<|call|>") ? (int32_t)i : call;
        calls = text_is(t, i, "<|calls|>") ? (int32_t)i : calls;
        flush = text_is(t, i, "<|flush|>") ? (int32_t)i : flush;
        end = text_is(t, i, "<|end|>") ? (int32_t)i : end;
        tool = text_is(t, i, "<|tool_response>") ? (int32_t)i : tool;
        s_end = text_is(t, i, "</s>") ? (int32_t)i : s_end;
    }
    /* o200k_harmony and solar-open: <|end|> is not an end of generation */
    if (end >= 0 && ((ret >= 0 && call >= 0) || (calls >= 0 && flush >= 0)))
        t->type[end] = TT_USER;
    /* gemma4 and paddleocr: </s> is not one either */
    if (tool >= 0 && s_end >= 0)
        t->type[s_end] = TT_NORMAL;
}

static void set_scores_types(as_tokenizer *t, const as_tokenizer_spec *sp)
{
    for (size_t i = 0; i < t->n; i++) {
        float s = sp->scores ? sp->scores[i] : 0.0f;
        t->score[i] = isnan(s) ? -INFINITY : s; /* NaN would break the heap order */
        int32_t ty = sp->token_types ? sp->token_types[i] : guess_type(t, i);
        t->type[i] = (ty >= TT_NORMAL && ty <= TT_BYTE) ? (uint8_t)ty : TT_NORMAL;
        if (t->algo->kind == AS_TOK_NONE)
            t->type[i] = TT_CONTROL; /* "#17" stands for no bytes */
    }
    /* Without token types (a llama2.c tokenizer), BOS and EOS are control:
     * the header promises they decode to nothing. With types, the file's
     * word stands, as in llama.cpp. */
    if (!sp->token_types && t->bos >= 0)
        t->type[t->bos] = TT_CONTROL;
    if (!sp->token_types && t->eos >= 0)
        t->type[t->eos] = TT_CONTROL;
    if (t->algo->kind != AS_TOK_NONE)
        llama_cpp_types(t);
}

static bool from_plain_text(const as_tokenizer *t, size_t i)
{
    return t->type[i] == TT_NORMAL || (!t->algo->byte_fallback && t->type[i] == TT_BYTE);
}

static int build_maps(as_tokenizer *t, as_error *err)
{
    if (!as_tok_strmap_init(&t->all, t->n) || !as_tok_strmap_init(&t->plain, t->n))
        return as_tok_oom(err);
    for (size_t i = 0; i < t->n; i++) {
        if (t->len[i] == 0)
            continue; /* an empty token can never be looked up */
        as_tok_strmap_put(t, &t->all, (int32_t)i);
        if (!from_plain_text(t, i))
            continue;
        as_tok_strmap_put(t, &t->plain, (int32_t)i);
        if (t->len[i] > t->max_plain_len)
            t->max_plain_len = t->len[i];
        const uint8_t *s = (const uint8_t *)t->arena + t->off[i];
        for (size_t j = 1; j < t->len[i]; j++) {
            unsigned pair = (unsigned)s[j - 1] << 8 | s[j];
            t->pair_seen[pair >> 6] |= 1ull << (pair & 63);
        }
    }
    return AS_OK;
}

static void find_byte_tokens(as_tokenizer *t)
{
    for (int b = 0; b < 256; b++)
        t->byte_tok[b] = t->algo->byte_token(t, (uint8_t)b);
}

typedef struct lenid {
    uint32_t len;
    int32_t id;
} lenid;

static int cmp_lenid(const void *pa, const void *pb)
{
    const lenid *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static bool is_special(const as_tokenizer *t, size_t i)
{
    uint8_t ty = t->type[i];
    return (ty == TT_USER || ty == TT_CONTROL || ty == TT_UNKNOWN) && t->len[i] > 0;
}

/* llama.cpp's cache_special_tokens: control, user-defined and unknown
 * tokens, cut out of the text longest first (its sort is not stable;
 * equal lengths go here by id). */
static int collect_special_tokens(as_tokenizer *t, as_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += is_special(t, i);
    if (n == 0 || t->algo->kind == AS_TOK_NONE)
        return AS_OK;
    lenid *v = malloc(n * sizeof *v);
    if (!v || !(t->special = malloc(n * sizeof *t->special))) {
        free(v);
        return as_tok_oom(err);
    }
    for (size_t i = 0, k = 0; i < t->n; i++)
        if (is_special(t, i))
            v[k++] = (lenid){t->len[i], (int32_t)i};
    qsort(v, n, sizeof *v, cmp_lenid);
    for (size_t i = 0; i < n; i++)
        t->special[i] = v[i].id;
    t->n_special = n;
    free(v);
    return AS_OK;
}

/* gpt2: the pre-tokenizer spec->pre names; an unknown name runs GPT-2's
 * split, with a warning (llama.cpp refuses the file). */
static int choose_pre(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    if (t->algo->kind != AS_TOK_GPT2)
        return AS_OK;
    const char *name = sp->pre ? sp->pre : "gpt-2";
    snprintf(t->pre_name, sizeof t->pre_name, "%s", name);
    t->pre = name[0] ? as_tok_pre_find(name) : as_tok_pre_type("default");
    if (!t->pre) {
        t->pre = as_tok_pre_type("gpt2");
        snprintf(t->warning, sizeof t->warning,
                 "pre-tokenizer '%.60s' is unknown to attnscope: text is split as GPT-2 splits it, "
                 "so ids may differ from llama.cpp's (which refuses this file)",
                 name);
        as_defang(t->warning); /* the name is the file's bytes, and "%.60s" may cut a character */
    }
    t->ignore_merges = t->pre->ignore_merges;
    return as_tok_pre_compile(t, err);
}

/* spec.pair: "ID:T", "$A:T", "$B:T" items, space-separated, each text once. */
static int parse_pair(as_tokenizer *t, const char *s, as_error *err)
{
    if (!s)
        return AS_OK;
    size_t cap = strlen(s) / 2 + 1, n = 0;
    bool a = false, b = false;
    if (!(t->pair_item = malloc(cap * sizeof *t->pair_item)) || !(t->pair_type = malloc(cap * sizeof *t->pair_type)))
        return as_tok_oom(err);
    for (const char *p = s; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        long item, ty;
        char *end;
        if (p[0] == '$' && (p[1] == 'A' || p[1] == 'B')) {
            item = p[1] == 'A' ? -1 : -2;
            if ((item == -1 && a) || (item == -2 && b))
                return as_error_set(err, "tokenizer.attnscope.pair '%.60s': $%c twice", s, p[1]);
            a |= item == -1, b |= item == -2;
            end = (char *)p + 2;
        } else {
            item = strtol(p, &end, 10);
            if (end == p || item < 0 || (size_t)item >= t->n)
                return as_error_set(err, "tokenizer.attnscope.pair '%.60s': '%.12s' is no token id", s, p);
        }
        if (*end != ':' || (ty = strtol(end + 1, &end, 10), ty < 0 || ty > 1023) || (*end && *end != ' ') || n >= cap)
            return as_error_set(err, "tokenizer.attnscope.pair '%.60s': expected ID:TYPE or $A:TYPE items", s);
        t->pair_item[n] = (int32_t)item, t->pair_type[n++] = (int32_t)ty;
        p = end;
    }
    if (!a || !b)
        return as_error_set(err, "tokenizer.attnscope.pair '%.60s': needs $A and $B", s);
    t->n_pair = n;
    return AS_OK;
}

static int build(as_tokenizer *t, const as_tok_algo *algo, const as_tokenizer_spec *sp,
                 as_error *err)
{
    t->algo = algo;
    t->n = sp->n_tokens;
    t->bos = sp->bos_id < 0 ? -1 : sp->bos_id;
    t->eos = sp->eos_id < 0 ? -1 : sp->eos_id;
    t->unk = sp->unk_id < 0 ? -1 : sp->unk_id;
    t->sep = t->pad = t->mask = -1; /* bert's build sets them */
    t->add_bos = sp->add_bos;
    t->add_eos = sp->add_eos;
    t->add_space_prefix = algo->space_prefix && sp->add_space_prefix;
    t->nfc = sp->nfc && algo->kind != AS_TOK_NONE;
    t->off = malloc(t->n * sizeof *t->off);
    t->len = malloc(t->n * sizeof *t->len);
    t->score = malloc(t->n * sizeof *t->score);
    t->type = malloc(t->n);
    if (!t->off || !t->len || !t->score || !t->type)
        return as_tok_oom(err);
    if (copy_tokens(t, sp, err))
        return AS_ERR;
    set_scores_types(t, sp);
    if (build_maps(t, err))
        return AS_ERR;
    find_byte_tokens(t);
    if (algo->build && algo->build(t, sp, err))
        return AS_ERR;
    if (choose_pre(t, sp, err) || parse_pair(t, sp->pair, err))
        return AS_ERR;
    return collect_special_tokens(t, err);
}

int as_tokenizer_new(as_tokenizer **out, const as_tokenizer_spec *spec, as_error *err)
{
    if (!out)
        return as_error_set(err, "tokenizer: no output pointer given");
    *out = NULL;
    const as_tok_algo *algo = NULL;
    if (check_spec(spec, &algo, err))
        return AS_ERR;
    as_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return as_tok_oom(err);
    if (build(t, algo, spec, err)) {
        as_tokenizer_free(t);
        return AS_ERR;
    }
    *out = t;
    return AS_OK;
}

int as_tokenizer_labels(as_tokenizer **out, const char *const *names, const uint64_t *lens, size_t n,
                        as_error *err)
{
    as_tokenizer_spec sp = {.kind = AS_TOK_NONE, .tokens = names, .token_lens = lens, .n_tokens = n,
                            .bos_id = -1, .eos_id = -1, .unk_id = -1};
    return as_tokenizer_new(out, &sp, err);
}

void as_tokenizer_free(as_tokenizer *t)
{
    if (!t)
        return;
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->score);
    free(t->type);
    free(t->all.slot);
    free(t->plain.slot);
    free(t->merges.key);
    free(t->merges.rank);
    free(t->merges.result);
    free(t->special);
    free(t->strip);
    free(t->lens_desc);
    free(t->pair_item);
    free(t->pair_type);
    as_tok_pre_free(t);
    as_tok_ugm_free(t->ugm);
    free(t);
}
