#include "view.h"

#include "datadir.h"
#include "lesson.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const as_command_info commands[] = {
    {"lesson", "lesson [NAME]",
     "A guided tour on the bundled models: commands and what they show, a step at a time (in the full-screen "
     "view Space goes on, Backspace back, Esc ends; the REPL pauses for Enter; batch mode runs them straight through). "
     "`lesson` lists them.",
     "lesson attention"},
    {"set", "set delay MS | cmap viridis|magma|gray",
     "View settings: the pause after each token `gen` produces, and the heatmap's colormap.",
     "set delay 300"},
    {"view", "view layer N | head N | pos N|last | key N | norm ln1|ln2|final | grid on|off | "
     "site self|cross|encoder | zoom in|out|N|max|mean | find TEXT | dump FILE | dump-layout FILE | view attention|tokens|probs|lens|norms|output|routing|math|positions|"
     "mlp|residual|mla",
     "Choose what the full-screen view shows (the keys do the same; `key` is the heatmap cursor's column, at "
     "most the selected token); `site cross` shows an encoder-decoder's cross-attention (rows the target's "
     "tokens, columns the source's), `site encoder` its encoder's self-attention (key x cycles them); a pane's "
     "name focuses it (keys 1-7; routing: a model with routed MLPs; math, key 8 or m: the selected head's scaled "
     "dot-product attention worked out from the captured q, k, scores, pattern and z, the cursor's key followed; "
     "positions, key p: the model's position signal; mlp, key a: the activation function with the token's "
     "pre-activations on it; residual, key r: the residual stream's norm by depth with the norms where the "
     "architecture puts them; mla, key M: a latent-attention model's latent and its cache), "
     "on a small screen showing it in the shared slot; `zoom` zooms the heatmap out by powers of two (keys - and +: "
     "each cell N x N tokens, the max of their weights or, with `zoom mean` (key z), the mean of the visible ones, "
     "masked cells left out; the title says which and the block; `zoom 1` one token a cell again); `find TEXT` puts "
     "the query and key on the next token where TEXT starts in the context's text (wrapping; `pos N` on position N); `dump` writes the screen to FILE as plain text, "
     "one line per row; `dump-layout` writes where each pane and a lesson's box are.",
     "view lens"},
};

#define N_VIEW_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

const as_command_info *view_commands(int *n)
{
    *n = N_VIEW_COMMANDS;
    return commands;
}

static const char *const pane_names[VIEW_N_PANES] = {"attention", "tokens", "probs", "lens", "norms", "output",
                                                      "routing", "math", "positions", "mlp",
                                                      "residual", "mla"};

const char *view_pane_name(int i)
{
    return i >= 0 && i < VIEW_N_PANES ? pane_names[i] : "?";
}

/* A pane's name, or a short form of it (attn, log, next). */
static int pane_index(const char *name)
{
    static const char *const also[VIEW_N_PANES] = {"attn", "strip", "next", "logit-lens", "layernorm", "log", "experts",
                                                   "arithmetic", "pos", "activations", "resid", "latent"};
    for (int i = 0; i < VIEW_N_PANES; i++)
        if (!strcmp(name, pane_names[i]) || !strcmp(name, also[i]))
            return i;
    return -1;
}

void view_init(view *v)
{
    memset(v, 0, sizeof *v);
    v->pane_req = -1;
    v->follow = true;
    v->cmap = AS_CMAP_VIRIDIS;
    v->zoom = 1;
    v->delay_ms = 150;
}

const char *view_norm_name(norm_kind k)
{
    static const char *const names[NK_COUNT] = {"ln1", "ln1_post", "ln2", "ln2_post", "ln3", "final"};
    return k < NK_COUNT ? names[k] : "?";
}

int view_norm_hook(const as_program *p, int layer, norm_kind k)
{
    static const as_hook_kind kinds[NK_COUNT] = {AS_HK_LN1_SCALE, AS_HK_LN1_POST_SCALE, AS_HK_LN2_SCALE,
                                                 AS_HK_LN2_POST_SCALE, AS_HK_LN3_SCALE, AS_HK_LNF_SCALE};
    return k < NK_COUNT ? as_program_hook_in(p, kinds[k], k == NK_FINAL ? -1 : layer, as_program_pick_stream(p, AS_PICK_SELF)) : -1;
}

norm_kind view_norm_step(const as_program *p, int layer, norm_kind k, int d)
{
    for (int i = 1; i <= NK_COUNT; i++) {
        norm_kind n = (norm_kind)(((int)k + i * d) % NK_COUNT + NK_COUNT) % NK_COUNT;
        if (view_norm_hook(p, layer, n) >= 0)
            return n;
    }
    return k;
}

/* Where an encoder's view starts: the first [MASK] (what the masked-LM
 * head is asked about), else the last token. */
static int first_mask(const as_session *s, int n)
{
    int32_t mask = as_tokenizer_mask(as_view_tokenizer(s));
    for (int i = 0; mask >= 0 && i < n; i++)
        if (as_view_token(s, i) == mask)
            return i;
    return n - 1;
}

static int clampi(int x, int lo, int hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void view_clamp(view *v, const as_session *s)
{
    int n = as_view_n_tokens(s);
    bool causal = as_view_causal(s);
    v->layer = clampi(v->layer, 0, as_view_n_layer(s) - 1);
    v->head = clampi(v->head, 0, as_view_n_head(s) - 1);
    if (v->follow || v->query >= n)
        v->query = causal ? n - 1 : as_view_logits_pos(s) >= 0 ? as_view_logits_pos(s) : first_mask(s, n);
    v->query = clampi(v->query, 0, n > 0 ? n - 1 : 0);
    int ns = as_view_source_stream(s) >= 0 ? as_view_stream_tokens(s, as_view_source_stream(s)) : 0;
    v->src_query = clampi(v->src_query, 0, ns > 0 ? ns - 1 : 0);
    if (v->site != AS_PICK_SELF && as_view_source_stream(s) >= 0) {
        /* cross-attention and the encoder's: every source position is a key */
        v->key = clampi(v->key, 0, ns > 0 ? ns - 1 : 0);
        return;
    }
    v->site = AS_PICK_SELF;
    /* An encoder's tokens see the keys after them too. */
    v->key = clampi(v->key, 0, causal ? v->query : (n > 0 ? n - 1 : 0));
}

int view_site(view *v, const as_session *s, const char *name, as_error *err)
{
    if (strcmp(name, "self") && strcmp(name, "cross") && strcmp(name, "encoder"))
        return as_error_set(err, "unknown site '%s' (self, or cross and encoder on an encoder-decoder)", name);
    if (strcmp(name, "self") && as_view_source_stream(s) < 0)
        return as_error_set(err, "%s has no %s: its one attention site is self (%s is an encoder-decoder's)",
                            as_view_model_name(s), !strcmp(name, "cross") ? "cross-attention" : "separate encoder", name);
    v->site = !strcmp(name, "cross") ? AS_PICK_CROSS : !strcmp(name, "encoder") ? AS_PICK_SOURCE : AS_PICK_SELF;
    return AS_OK;
}

static int parse_int(const char *str, int lo, int hi, const char *what, int *out, as_error *err)
{
    char *end;
    errno = 0;
    long x = strtol(str, &end, 10);
    if (errno || end == str || *end || x < lo || x > hi)
        return as_error_set(err, "%s must be a whole number from %d to %d, not '%s'", what, lo, hi, str);
    *out = (int)x;
    return AS_OK;
}

static int set_cmap(view *v, const char *name, as_error *err)
{
    int c = as_cmap_parse(name);
    if (c < 0)
        return as_error_set(err, "unknown colormap '%s' (viridis, magma, gray)", name);
    v->cmap = (as_cmap)c;
    return AS_OK;
}

static int view_set(view *v, as_session *s, char **w, int n, as_error *err)
{
    if (n != 3)
        return as_error_set(err, "usage: set delay MS | set cmap viridis|magma|gray");
    if (!strcmp(w[1], "delay")) {
        if (parse_int(w[2], 0, 10000, "the delay (ms)", &v->delay_ms, err))
            return AS_ERR;
        fprintf(as_view_out(s), "delay = %d ms (pause after each token gen produces, in the full-screen view)\n",
                v->delay_ms);
        return AS_OK;
    }
    if (set_cmap(v, w[2], err))
        return AS_ERR;
    fprintf(as_view_out(s), "cmap = %s\n", as_cmap_name(v->cmap));
    return AS_OK;
}

static int view_norm(view *v, const char *name, as_error *err)
{
    for (int k = 0; k < NK_COUNT; k++)
        if (!strcmp(name, view_norm_name((norm_kind)k))) {
            v->norm = (norm_kind)k;
            return AS_OK;
        }
    return as_error_set(err, "unknown norm '%s' (ln1, ln2, final; ln1_post, ln2_post, ln3 where the model has them)",
                        name);
}

static int view_pos(view *v, const as_session *s, const char *arg, as_error *err)
{
    int n = as_view_n_tokens(s);
    bool causal = as_view_causal(s);
    if (!strcmp(arg, "last")) {
        v->follow = causal; /* an encoder's following position is its first [MASK] */
        v->query = n - 1;
        return AS_OK;
    }
    if (n == 0)
        return as_error_set(err, "no context yet: start with `prompt TEXT`");
    if (parse_int(arg, 0, n - 1, "the position", &v->query, err))
        return AS_ERR;
    v->follow = v->query == n - 1 && causal;
    return AS_OK;
}

int view_zoom_most(int n)
{
    int z = 1;
    while (z < 4096 && z < n / 2)
        z *= 2;
    return z;
}

/* `view zoom in|out|N|max|mean`: halves or doubles the tokens a cell
 * holds, sets them, or picks what a cell shows. */
static int view_zoom(view *v, const as_session *s, const char *arg, as_error *err)
{
    int most = view_zoom_most(as_view_n_tokens(s));
    if (!strcmp(arg, "max") || !strcmp(arg, "mean")) {
        v->zoom_mean = !strcmp(arg, "mean");
        return AS_OK;
    }
    if (!strcmp(arg, "in") || !strcmp(arg, "out")) {
        v->zoom = !strcmp(arg, "in") ? (v->zoom > 1 ? v->zoom / 2 : 1) : (v->zoom < most ? v->zoom * 2 : v->zoom);
        return AS_OK;
    }
    int z;
    if (parse_int(arg, 1, 4096, "the zoom (tokens a cell)", &z, err))
        return AS_ERR;
    if (z & (z - 1))
        return as_error_set(err, "view zoom %d: the tokens a cell are a power of two (1, 2, 4, ... 4096)", z);
    v->zoom = z;
    return AS_OK;
}

int view_find(const as_session *s, const char *text, int from)
{
    int n = as_view_n_tokens(s);
    size_t len = strlen(text), cap = 0, used = 0;
    if (n == 0 || len == 0)
        return -1;
    const as_tokenizer *tok = as_view_tokenizer(s);
    int *start = malloc((size_t)n * sizeof *start);
    char *all = NULL;
    if (!start)
        return -1;
    for (int i = 0; i < n; i++) {
        char bytes[256];
        size_t b = tok ? as_tokenizer_token_bytes(tok, as_view_token(s, i), bytes, sizeof bytes) : 0;
        if (b > sizeof bytes)
            b = sizeof bytes;
        if (used + b + 1 > cap) {
            size_t nc = (used + b + 1) * 2;
            char *t = realloc(all, nc);
            if (!t) {
                free(all);
                free(start);
                return -1;
            }
            all = t;
            cap = nc;
        }
        start[i] = (int)used;
        memcpy(all + used, bytes, b);
        used += b;
        all[used] = '\0';
    }
    int found = -1;
    /* each start position after `from`, then from the beginning */
    for (int step = 1; step <= n && found < 0 && all; step++) {
        int i = (from + step) % n;
        int next = i + 1 < n ? start[i + 1] : (int)used;
        /* a match starts inside token i's bytes (BOS and EOS have none) */
        for (int at = start[i]; at < next; at++)
            if ((size_t)at + len <= used && !memcmp(all + at, text, len)) {
                found = i;
                break;
            }
    }
    free(all);
    free(start);
    return found;
}

/* `view find TEXT`: the query and the key on the next token holding TEXT. */
static int view_find_cmd(view *v, const as_session *s, char **w, int n, as_error *err)
{
    char text[512] = "";
    size_t o = 0;
    for (int i = 2; i < n; i++)
        o += (size_t)snprintf(text + o, o < sizeof text ? sizeof text - o : 0, "%s%s", i > 2 ? " " : "", w[i]);
    if (o >= sizeof text)
        return as_error_set(err, "view find: the text is longer than %zu bytes", sizeof text - 1);
    if (as_view_n_tokens(s) == 0)
        return as_error_set(err, "no context yet: start with `prompt TEXT`");
    int pos = view_find(s, text, v->query);
    if (pos < 0)
        return as_error_set(err, "view find: \"%s\" is not in the context's %d tokens (`tokens` lists them)", text,
                            as_view_n_tokens(s));
    v->query = pos;
    v->key = pos;
    v->follow = false;
    v->site = AS_PICK_SELF;
    return AS_OK;
}

/* The screen as text: only the full-screen view has one. */
static int view_dump(view *v, const char *path, as_error *err)
{
    if (!v->dump)
        return as_error_set(err, "view dump: there is no screen to dump outside the full-screen view");
    return v->dump(v->dump_ctx, path, err);
}

static int view_cmd(view *v, as_session *s, char **w, int n, as_error *err)
{
    int rc;
    if (n == 2 && pane_index(w[1]) >= 0) {
        /* the routing pane exists where a layer routes its MLP */
        bool routed = false;
        for (int l = 0; l < as_view_n_layer(s) && !routed; l++)
            routed = as_program_hook(as_view_program(s), AS_HK_EXPERT_INDICES, l) >= 0;
        if (!strcmp(view_pane_name(pane_index(w[1])), "routing") && !routed)
            return as_error_set(err, "%s has no routed MLPs (no mixture of experts): there is no routing pane",
                                as_view_model_name(s));
        v->pane_req = pane_index(w[1]);
        return AS_OK;
    }
    if (n >= 3 && !strcmp(w[1], "find")) {
        rc = view_find_cmd(v, s, w, n, err);
        if (rc == AS_OK)
            view_clamp(v, s);
        return rc;
    }
    if (n != 3)
        return as_error_set(err, "usage: %s", commands[2].usage);
    const char *what = w[1], *arg = w[2];
    if (!strcmp(what, "layer"))
        rc = parse_int(arg, 0, as_view_n_layer(s) - 1, "the layer", &v->layer, err);
    else if (!strcmp(what, "head"))
        rc = parse_int(arg, 0, as_view_n_head(s) - 1, "the head", &v->head, err);
    else if (!strcmp(what, "pos"))
        rc = view_pos(v, s, arg, err);
    else if (!strcmp(what, "key")) {
        /* a cross-attention's keys (and the encoder's) are the source's positions */
        int nk = v->site != AS_PICK_SELF ? as_view_stream_tokens(s, as_view_source_stream(s)) : as_view_n_tokens(s);
        rc = nk ? parse_int(arg, 0, nk - 1, "the key", &v->key, err)
                : as_error_set(err, "no context yet: start with `prompt TEXT`");
    }
    else if (!strcmp(what, "norm"))
        rc = view_norm(v, arg, err);
    else if (!strcmp(what, "cmap"))
        rc = set_cmap(v, arg, err);
    else if (!strcmp(what, "grid") && (!strcmp(arg, "on") || !strcmp(arg, "off")))
        rc = (v->grid = !strcmp(arg, "on"), AS_OK);
    else if (!strcmp(what, "site"))
        rc = view_site(v, s, arg, err);
    else if (!strcmp(what, "zoom"))
        rc = view_zoom(v, s, arg, err);
    else if (!strcmp(what, "dump"))
        return view_dump(v, arg, err);
    else if (!strcmp(what, "dump-layout"))
        return v->dump_layout ? v->dump_layout(v->dump_ctx, arg, err)
                              : as_error_set(err, "view dump-layout: there is no screen outside the full-screen view");
    else
        return as_error_set(err, "usage: %s", commands[2].usage);
    if (rc == AS_OK)
        view_clamp(v, s);
    return rc;
}

static int list_lessons(as_session *s)
{
    char names[64][64], titles[64][128];
    int n = lesson_list(names, titles, 64);
    if (n == 0) {
        fprintf(as_view_out(s), "no lessons found (they are in assets/lessons, or DATADIR/lessons when installed)\n");
        return AS_OK;
    }
    fprintf(as_view_out(s), "lessons (lesson NAME starts one; in the full-screen view Space goes on, Backspace back, Esc "
                    "ends):\n");
    for (int i = 0; i < n; i++)
        fprintf(as_view_out(s), "  %-12s %s\n", names[i], titles[i]);
    return AS_OK;
}

int view_lesson_model(as_session *s, const lesson *l, as_error *err)
{
    char buf[4096];
    if (!l->model || !strcmp(as_view_model_name(s), l->model))
        return AS_OK;
    return as_session_load(s, datadir_model(l->model, buf, sizeof buf), err);
}

/* Without a screen: every step's text, then its commands. */
static int run_through(view *v, as_session *s, lesson *l, as_error *err)
{
    fprintf(as_view_out(s), "lesson %s: %s (%d steps)\n", l->name, l->title, l->n_steps);
    int rc = view_lesson_model(s, l, err);
    v->in_lesson = true;
    for (int i = 0; rc == AS_OK && i < l->n_steps; i++) {
        fprintf(as_view_out(s), "\n--- step %d of %d ---\n%s\n", i + 1, l->n_steps, l->steps[i].text);
        for (int k = 0; rc == AS_OK && k < l->steps[i].n_cmds; k++) {
            fprintf(as_view_out(s), "> %s\n", l->steps[i].cmds[k]);
            rc = view_exec(v, s, l->steps[i].cmds[k], NULL, err);
        }
    }
    v->in_lesson = false;
    lesson_free(l);
    return rc;
}

static int view_lesson(view *v, as_session *s, char **w, int n, as_error *err)
{
    if (n == 1)
        return list_lessons(s);
    if (n != 2)
        return as_error_set(err, "usage: %s", commands[0].usage);
    if (v->in_lesson)
        return as_error_set(err, "a lesson cannot start a lesson (`lesson %s` inside a lesson's step)", w[1]);
    lesson l;
    if (lesson_load(w[1], &l, err))
        return AS_ERR;
    if (!v->lesson)
        return run_through(v, s, &l, err);
    lesson *kept = malloc(sizeof *kept);
    if (!kept) {
        lesson_free(&l);
        return as_error_set(err, "out of memory");
    }
    *kept = l;
    return v->lesson(v->dump_ctx, kept, err);
}

/* `help` lists the view's commands after the session's; `help set` and
 * `help view` explain the view's part. */
static void view_help(as_session *s, char **w, int n)
{
    for (int i = 0; i < N_VIEW_COMMANDS; i++) {
        if (n > 1 && strcmp(w[1], commands[i].name))
            continue;
        if (n > 1)
            fprintf(as_view_out(s), "%s\n  %s\n  example: %s\n", commands[i].usage, commands[i].help, commands[i].example);
        else
            fprintf(as_view_out(s), "  %-28s %s\n", commands[i].usage, commands[i].help);
    }
}

static bool is_view_command(const char *name)
{
    for (int i = 0; i < N_VIEW_COMMANDS; i++)
        if (!strcmp(name, commands[i].name) && strcmp(name, "set"))
            return true;
    return false;
}

static bool same_view(const view *a, const view *b)
{
    return a->layer == b->layer && a->head == b->head && a->query == b->query && a->key == b->key &&
           a->follow == b->follow && a->norm == b->norm && a->grid == b->grid && a->site == b->site && a->src_query == b->src_query && a->cmap == b->cmap &&
           a->zoom == b->zoom && a->zoom_mean == b->zoom_mean &&
           a->delay_ms == b->delay_ms && a->pane_req == b->pane_req;
}

static bool is_view_set(char **w, int n)
{
    return n >= 2 && !strcmp(w[0], "set") && (!strcmp(w[1], "delay") || !strcmp(w[1], "cmap"));
}

int view_exec(view *v, as_session *s, const char *cmd, bool *view_changed, as_error *err)
{
    char **w;
    int n, rc;
    if (as_split_words(cmd, &w, &n, err))
        return as_session_exec(s, cmd, err); /* text commands take what does not split (dialogue) */
    view before = *v;
    if (n > 0 && is_view_set(w, n)) {
        rc = view_set(v, s, w, n, err);
    } else if (n > 0 && !strcmp(w[0], "view")) {
        rc = view_cmd(v, s, w, n, err);
    } else if (n > 0 && !strcmp(w[0], "lesson")) {
        rc = view_lesson(v, s, w, n, err);
    } else if (n == 2 && !strcmp(w[0], "image") && !strchr(w[1], '/') && access(w[1], F_OK) != 0 &&
               !strchr(w[1], '"')) {
        /* a bundled image by name (a lesson's `image sneaker.png`), wherever the program runs */
        char buf[4096], line[4200];
        if (!datadir_find(DATA_IMAGES, w[1], buf, sizeof buf) || strchr(buf, '"'))
            snprintf(buf, sizeof buf, "%s", w[1]);
        snprintf(line, sizeof line, "image \"%s\"", buf);
        rc = as_session_exec(s, line, err);
    } else if (n == 2 && !strcmp(w[0], "load")) {
        char buf[4096];
        rc = as_session_load(s, datadir_model(w[1], buf, sizeof buf), err);
    } else if (n > 1 && !strcmp(w[0], "help") && is_view_command(w[1])) {
        view_help(s, w, n);
        rc = AS_OK;
    } else {
        rc = as_session_exec(s, cmd, err);
        if (n > 0 && !strcmp(w[0], "help") && (rc == AS_OK || n == 1))
            view_help(s, w, n);
        if (n == 1 && !strcmp(w[0], "set") && rc == AS_OK)
            fprintf(as_view_out(s), "delay = %d ms (the view's pause after each generated token)\ncmap = %s\n", v->delay_ms,
                    as_cmap_name(v->cmap));
    }
    if (view_changed)
        *view_changed = !same_view(&before, v);
    as_free_commands(w, n);
    return rc;
}
