/* attnscope's native arithmetic against llama.cpp's on the same quantized
 * files: the 12 presets of issue #32 (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_M
 * Q4_K_M Q5_K_M Q6_K IQ4_NL IQ4_XS), each written by llama.cpp's own
 * quantizer (llama_model_quantize) from one llama-shaped F32 model, then
 * run by both. Built and run by tests/peer/llama_quant.sh (`make
 * llama-compare`).
 *
 *   llama-quant LIBDIR PRODUCT_TOL LOGIT_TOL SRC.gguf WORKDIR
 *
 * The F32 model is SRC (models/austen-llama.gguf: d_model 256, 4 layers,
 * a 2048-token vocabulary) with its feed-forward width taken from 704 to
 * 768, so that every matrix's rows (ne[0]: 256 or 768) are whole 256-blocks
 * and the K-quants and IQ4_XS really apply (llama.cpp quantizes a row that
 * is not a multiple of 256 to a 32-block type instead): ffn_gate/ffn_up's
 * new rows 704..767 are rows 0..63 again, ffn_down's new columns are
 * columns 0..63 halved. Each quantized file must hold the preset's type in
 * attn_q, ffn_gate and ffn_up of every layer, and for the 256-block
 * presets no matrix of a layer may have fallen back to a 32-block type.
 *
 * Both engines take a 40-token prompt (llama.cpp's tokenizer on a fixed
 * text) in one batch and then generate 4 tokens greedily, one position at
 * a time over their KV caches (attnscope: `prompt-ids`, `finish`, `gen 4`
 * in its default arithmetic, which must be native; llama.cpp: llama_decode
 * of the prompt, then of each chosen token). llama.cpp runs ggml's
 * reference dot products: use_extra_bufts = false (no weight repacking,
 * whose kernels lay activations out their own way), KV cache in F32,
 * flash attention off, one thread.
 *
 * Asserted: every product llama.cpp computes with a matrix of the file
 * (7 a layer and the unembedding, in the prompt's pass and each generated
 * token's: 145 here), caught by its eval callback, is made again by
 * attnscope's as_linear on llama.cpp's own input rows, and agrees at every
 * position within PRODUCT_TOL of the position's largest output: the
 * activation quantizer, the integer kernels (the many-position one for the
 * prompt) and their float steps, on llama.cpp's real inputs.
 *
 * Reported, and asserted only with LLAMA_QUANT_STRICT=1: the logits end to
 * end at all 44 positions (within LOGIT_TOL of the largest, the issue's
 * 1e-3) and the 4 greedy tokens. They do not hold on every preset: the
 * operations between the products (norms, attention, SwiGLU) differ from
 * ggml's by float rounding (1e-7 relative), and where such a difference
 * moves an activation across a rounding boundary of its 8-bit quantization
 * (a value's int8, or a Q8_0/Q8_1 block's fp16 scale) the product changes
 * by a quantization step (1e-4 of it), which the following layers carry to
 * the logits at 1e-2. attnscope against itself with its portable float
 * kernels instead of its vector ones shows the same spread, and is printed
 * beside it; so is attnscope with `--activations f32` (float32
 * activations) on the same files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/capture.h"
#include "attnscope/engine.h"
#include "attnscope/gguf.h"
#include "attnscope/quant.h"
#include "attnscope/qdot.h"
#include "attnscope/session.h"
#include "../../src/session_internal.h" /* the session's fields, which the comparison reads */
#include "ggml-backend.h"
#include "llama.h"

#define N_PROMPT 40
#define N_GEN 4
#define N_POS (N_PROMPT + N_GEN)
#define FFN_OLD 704
#define FFN_NEW 768

static const char *const TEXT =
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
    "want of a wife. However little known the feelings or views of such a man may be on his first entering a "
    "neighbourhood, this truth is so well fixed in the minds of the surrounding families.";

typedef struct preset {
    const char *name;
    enum llama_ftype ftype;
    as_ggml_type main; /* attn_q, ffn_gate, ffn_up of every layer */
} preset;

static const preset PRESETS[] = {
    {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0, AS_GGML_Q4_0},       {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1, AS_GGML_Q4_1},
    {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0, AS_GGML_Q5_0},       {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1, AS_GGML_Q5_1},
    {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0, AS_GGML_Q8_0},       {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K, AS_GGML_Q2_K},
    {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M, AS_GGML_Q3_K},   {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M, AS_GGML_Q4_K},
    {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M, AS_GGML_Q5_K},   {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K, AS_GGML_Q6_K},
    {"IQ4_NL", LLAMA_FTYPE_MOSTLY_IQ4_NL, AS_GGML_IQ4_NL}, {"IQ4_XS", LLAMA_FTYPE_MOSTLY_IQ4_XS, AS_GGML_IQ4_XS},
};

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_COMPARE_LOG"))
        fputs(text, stderr);
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* SRC with its feed-forward width FFN_OLD -> FFN_NEW (see the top). */
static int widen(const char *src, const char *dst)
{
    as_gguf *g;
    as_error err = {{0}};
    if (as_gguf_open(&g, src, &err))
        return fprintf(stderr, "llama-quant: %s\n", err.msg), -1;
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    as_gguf_writer_set_u32(w, "llama.feed_forward_length", FFN_NEW);
    as_gguf_writer_set_str(w, "general.name", "austen-llama-ffn768");
    int rc = 0;
    float *buf = malloc((size_t)FFN_NEW * 2048 * sizeof *buf);
    for (uint64_t i = 0; i < g->n_tensors && rc == 0 && buf; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        const float *x = (const float *)t->data;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        bool up = strstr(t->name, "ffn_gate.weight") || strstr(t->name, "ffn_up.weight");
        bool down = strstr(t->name, "ffn_down.weight") != NULL;
        if (t->type != AS_GGML_F32 || (up && (ne[1] != FFN_OLD || ne[0] > 2048)) ||
            (down && (ne[0] != FFN_OLD || ne[1] > 2048))) {
            fprintf(stderr, "llama-quant: %s is not the F32 model expected (%s)\n", src, t->name);
            rc = -1;
        } else if (up) { /* [d][704] -> [d][768]: rows 704.. are rows 0.. again */
            memcpy(buf, x, (size_t)(ne[0] * FFN_OLD) * sizeof *buf);
            memcpy(buf + ne[0] * FFN_OLD, x, (size_t)(ne[0] * (FFN_NEW - FFN_OLD)) * sizeof *buf);
            ne[1] = FFN_NEW;
            rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, buf, &err);
        } else if (down) { /* rows of 704 -> 768: the new columns are columns 0.. halved */
            for (uint64_t r = 0; r < ne[1]; r++) {
                memcpy(buf + r * FFN_NEW, x + r * FFN_OLD, FFN_OLD * sizeof *buf);
                for (int c = 0; c < FFN_NEW - FFN_OLD; c++)
                    buf[r * FFN_NEW + FFN_OLD + (uint64_t)c] = 0.5f * x[r * FFN_OLD + (uint64_t)c];
            }
            ne[0] = FFN_NEW;
            rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne, buf, &err);
        } else {
            rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err);
        }
    }
    if (!buf)
        rc = -1;
    if (rc == 0 && as_gguf_writer_write(w, dst, &err))
        rc = -1;
    if (rc && err.msg[0])
        fprintf(stderr, "llama-quant: %s\n", err.msg);
    free(buf);
    as_gguf_writer_free(w);
    as_gguf_close(g);
    return rc;
}

/* The quantized file's types: the preset's in attn_q/ffn_gate/ffn_up of
 * every layer, and (256-block presets) 256-block types in every matrix of
 * a layer. Writes a census ("Q4_K x12, Q6_K x3, ...") into census. */
static int check_types(const char *path, const preset *p, char *census, size_t cap, char *msg, size_t mcap)
{
    as_gguf *g;
    as_error err = {{0}};
    if (as_gguf_open(&g, path, &err))
        return snprintf(msg, mcap, "%.400s", err.msg), -1;
    const as_ggml_traits *mt = as_ggml_traits_of(p->main);
    int count[64] = {0}, main_seen = 0, rc = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (t->n_dims < 2)
            continue;
        if ((unsigned)t->type < 64)
            count[t->type]++;
        if (strncmp(t->name, "blk.", 4))
            continue;
        bool main = strstr(t->name, "attn_q.weight") || strstr(t->name, "ffn_gate.weight") ||
                    strstr(t->name, "ffn_up.weight");
        const as_ggml_traits *tt = as_ggml_traits_of(t->type);
        if (main && t->type != p->main && rc == 0)
            rc = -1, snprintf(msg, mcap, "%s is %s, not the preset's %s", t->name, as_ggml_type_name(t->type),
                              mt->name);
        main_seen += main;
        if (mt->block_elems == 256 && (!tt || tt->block_elems != 256) && rc == 0)
            rc = -1, snprintf(msg, mcap, "%s fell back to %s (rows of %llu)", t->name, as_ggml_type_name(t->type),
                              (unsigned long long)t->ne[0]);
    }
    if (rc == 0 && main_seen == 0)
        rc = -1, snprintf(msg, mcap, "no attn_q/ffn_gate/ffn_up in the file");
    size_t o = 0;
    census[0] = 0;
    for (int ty = 0; ty < 64 && o < cap; ty++)
        if (count[ty])
            o += (size_t)snprintf(census + o, cap - o, "%s%s x%d", o ? ", " : "", as_ggml_type_name((as_ggml_type)ty),
                                  count[ty]);
    as_gguf_close(g);
    return rc;
}

/* worst max|a-b| / max|b| over the rows; *at: its row. */
static double worst_rel(const float *a, const float *b, int n, int w, int *at)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double mx = 0, d = 0;
        for (int j = 0; j < w; j++) {
            mx = fmax(mx, fabs(b[(size_t)i * w + j]));
            d = fmax(d, fabs((double)a[(size_t)i * w + j] - b[(size_t)i * w + j]));
        }
        double r = d / (mx > 0 ? mx : 1);
        if (!(r <= worst))
            worst = r, *at = i;
    }
    return worst;
}

/* Every product llama.cpp runs with a matrix of the file, made again by
 * attnscope on llama.cpp's own input rows (as_linear: its native dispatch,
 * activation quantizer and integer kernels, the many-position kernel for
 * the prompt's batch): worst max_r |a_r - b_r| / max_r |b_r| over every
 * position of every product. */
typedef struct product_check {
    const as_gguf *g;
    int products, attention; /* with a matrix of the file; the rest (q·k, pattern·v) */
    double worst;
    char worst_at[128];
    char msg[256]; /* a product that could not be read ("" none) */
} product_check;

static const as_gguf_tensor *file_tensor(const as_gguf *g, const char *name)
{
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (!strcmp(g->tensors[i].name, name))
            return &g->tensors[i];
    return NULL;
}

static bool product_cb(struct ggml_tensor *t, bool ask, void *ud)
{
    product_check *pc = ud;
    if (ask) /* only the products are asked for */
        return t->op == GGML_OP_MUL_MAT;
    if (t->op != GGML_OP_MUL_MAT) /* false would stop llama.cpp's pass */
        return true;
    const struct ggml_tensor *w = t->src[0], *x = t->src[1];
    const as_gguf_tensor *gt = file_tensor(pc->g, w->name);
    if (!gt) {
        pc->attention++;
        return true;
    }
    if (x->type != GGML_TYPE_F32 || t->type != GGML_TYPE_F32 || !ggml_is_contiguous(x) || !ggml_is_contiguous(t) ||
        x->ne[2] * x->ne[3] != 1 || (uint64_t)x->ne[0] != gt->ne[0] || (uint64_t)t->ne[0] != gt->ne[1]) {
        if (!pc->msg[0])
            snprintf(pc->msg, sizeof pc->msg, "llama.cpp's product with %s has an input or output of another shape",
                     w->name);
        return true;
    }
    int n = (int)x->ne[1], cols = (int)x->ne[0], rows = (int)t->ne[0];
    float *in = malloc(ggml_nbytes(x)), *theirs = malloc(ggml_nbytes(t)), *ours = malloc(ggml_nbytes(t));
    if (in && theirs && ours) {
        ggml_backend_tensor_get(x, in, 0, ggml_nbytes(x));
        ggml_backend_tensor_get(t, theirs, 0, ggml_nbytes(t));
        as_weight aw = {gt->data, gt->type, rows, cols, (size_t)as_ggml_nbytes(gt->type, (uint64_t)cols)};
        as_linear(in, n, &aw, NULL, ours);
        int at = 0;
        double r = worst_rel(ours, theirs, n, rows, &at);
        if (!(r <= pc->worst) || pc->products == 0)
            pc->worst = r, snprintf(pc->worst_at, sizeof pc->worst_at, "%s (%s), row %d of %d", w->name,
                                    as_ggml_type_name(gt->type), at, n);
        pc->products++;
    } else if (!pc->msg[0]) {
        snprintf(pc->msg, sizeof pc->msg, "out of memory");
    }
    free(in), free(theirs), free(ours);
    return true;
}

/* llama.cpp: the prompt in one batch, then N_GEN greedy tokens one by one;
 * logits [N_POS][V] and the generated tokens into gen. */
static float *llama_run(const char *gguf, const int32_t *ids, int *V, int32_t *gen, product_check *pc)
{
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.use_extra_bufts = false; /* ggml's reference dot products: no repacked weights */
    struct llama_model *model = llama_model_load_from_file(gguf, mp);
    if (!model)
        return NULL;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = cp.n_ubatch = N_PROMPT;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = 1;
    cp.cb_eval = product_cb;
    cp.cb_eval_user_data = pc;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    float *out = NULL;
    if (ctx) {
        *V = llama_vocab_n_tokens(llama_model_get_vocab(model));
        out = malloc((size_t)N_POS * (size_t)*V * sizeof *out);
        struct llama_batch b = llama_batch_init(N_PROMPT, 0, 1);
        for (int i = 0; i < N_PROMPT; i++) {
            b.token[i] = ids[i];
            b.pos[i] = i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = 1;
        }
        b.n_tokens = N_PROMPT;
        bool ok = out && llama_decode(ctx, b) == 0;
        for (int i = 0; ok && i < N_PROMPT; i++)
            memcpy(out + (size_t)i * (size_t)*V, llama_get_logits_ith(ctx, i), (size_t)*V * sizeof *out);
        for (int g = 0; ok && g < N_GEN; g++) {
            int32_t tok = argmax(out + (size_t)(N_PROMPT + g - 1) * (size_t)*V, *V);
            gen[g] = tok;
            b.token[0] = tok;
            b.pos[0] = N_PROMPT + g;
            b.n_tokens = 1;
            ok = llama_decode(ctx, b) == 0;
            if (ok)
                memcpy(out + (size_t)(N_PROMPT + g) * (size_t)*V, llama_get_logits_ith(ctx, 0),
                       (size_t)*V * sizeof *out);
        }
        if (!ok)
            free(out), out = NULL;
        llama_batch_free(b);
        llama_free(ctx);
    }
    llama_model_free(model);
    return out;
}

/* attnscope in the arithmetic given: `prompt-ids`, `finish`, `gen N_GEN`. */
static float *attnscope_run(const char *gguf, const char *activations, const int32_t *ids, int V, int32_t *gen,
                            char *msg, size_t cap)
{
    as_session *s = NULL;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    char cmd[1024];
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "prompt-ids");
    for (int i = 0; i < N_PROMPT; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", ids[i]);
    char gencmd[16];
    snprintf(gencmd, sizeof gencmd, "gen %d", N_GEN);
    if (!as_set_activations(activations))
        return snprintf(msg, cap, "no setting %s", activations), NULL;
    float *out = NULL;
    if (!null || as_session_new(&s, gguf, 256, null, null, &err) || as_session_exec(s, cmd, &err) ||
        as_session_exec(s, "finish", &err) || as_session_exec(s, gencmd, &err)) {
        snprintf(msg, cap, "%.400s", err.msg);
    } else {
        int h = as_program_hook(s->prog, AS_HK_LOGITS, -1);
        const as_stream_state *st = s->it->out;
        if (s->model->cfg.n_vocab != V || !as_capture_has(s->cap, h) || st->n_tokens != N_POS ||
            st->n_done != N_POS) {
            snprintf(msg, cap, "no logits at %d positions (vocabulary %d vs %d, %d tokens, %d done)", N_POS,
                     s->model->cfg.n_vocab, V, st->n_tokens, st->n_done);
        } else if ((out = malloc((size_t)N_POS * (size_t)V * sizeof *out))) {
            for (int i = 0; i < N_POS; i++)
                memcpy(out + (size_t)i * (size_t)V, as_capture_row(s->cap, h, i), (size_t)V * sizeof *out);
            memcpy(gen, st->tokens + N_PROMPT, N_GEN * sizeof *gen);
        }
    }
    as_session_free(s);
    if (null)
        fclose(null);
    return out;
}

static int one_preset(const preset *p, const char *base, const char *dir, const int32_t *ids, double tol,
                      double ptol, bool strict)
{
    char path[1024], census[512], msg[512] = "";
    snprintf(path, sizeof path, "%s/%s.gguf", dir, p->name);
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = p->ftype;
    qp.nthread = 2;
    if (llama_model_quantize(base, path, &qp))
        return printf("FAIL %s: llama_model_quantize failed (LLAMA_COMPARE_LOG=1 shows why)\n", p->name), 1;
    if (check_types(path, p, census, sizeof census, msg, sizeof msg))
        return printf("FAIL %s: the quantized file: %s [%s]\n", p->name, msg, census), 1;
    as_gguf *g;
    as_error err = {{0}};
    if (as_gguf_open(&g, path, &err))
        return printf("FAIL %s: %s\n", p->name, err.msg), 1;
    int V = 0, at = 0, at32 = 0, n_layer = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        n_layer += strstr(g->tensors[i].name, ".attn_q.weight") != NULL;
    int32_t lgen[N_GEN], agen[N_GEN], fgen[N_GEN];
    product_check pc = {.g = g};
    float *b = llama_run(path, ids, &V, lgen, &pc);
    as_gguf_close(g);
    if (!b)
        return printf("FAIL %s: llama.cpp cannot run it (LLAMA_COMPARE_LOG=1 shows why)\n", p->name), 1;
    /* every matrix of every layer and the unembedding, in the prompt's pass and each generated token's */
    int want = (1 + N_GEN) * (7 * n_layer + 1);
    bool pok = !pc.msg[0] && pc.products == want && pc.worst <= ptol;
    printf("%s %s [%s]: llama.cpp's %d products with the file's matrices (of %d expected; %d more between "
           "activations) made again by attnscope on llama.cpp's inputs: worst max|a-b| / max|b| = %.2e at %s "
           "(limit %.0e)%s%s\n",
           pok ? "ok  " : "FAIL", p->name, census, pc.products, want, pc.attention, pc.worst, pc.worst_at, ptol,
           pc.msg[0] ? "; " : "", pc.msg);
    float *a = attnscope_run(path, "native", ids, V, agen, msg, sizeof msg);
    if (!a)
        return free(b), printf("FAIL %s: attnscope: %s\n", p->name, msg), 1;
    double w = worst_rel(a, b, N_POS, V, &at);
    bool same = !memcmp(lgen, agen, sizeof lgen), eok = w <= tol && same;
    /* float32 activations on the same file: reported, never asserted */
    float *f = attnscope_run(path, "f32", ids, V, fgen, msg, sizeof msg);
    double w32 = f ? worst_rel(f, b, N_POS, V, &at32) : NAN;
    as_set_activations("native");
    /* attnscope against itself: the portable float kernels (norms, attention, activations; the integer
     * dots give the same bits) instead of the vector ones, for the spread one rounding step makes */
    char isa[32];
    snprintf(isa, sizeof isa, "%s", as_kernels_isa());
    int32_t ggen[N_GEN];
    int atg = 0;
    float *gl = NULL;
    if (strcmp(isa, "generic") && as_kernels_use("generic")) {
        gl = attnscope_run(path, "native", ids, V, ggen, msg, sizeof msg);
        as_kernels_use(isa);
    }
    double wg = gl ? worst_rel(gl, a, N_POS, V, &atg) : NAN;
    printf("%s %s: end to end, %d positions x %d logits (a %d-token prompt, %d generated): worst max|a-b| / max|b| "
           "= %.2e at position %d, %s %.0e%s; greedy %d,%d,%d,%d %s llama.cpp's %d,%d,%d,%d; with --activations "
           "f32: %.2e at position %d, greedy %s; attnscope's generic kernels against its %s: %.2e at position %d, "
           "greedy %s\n",
           eok ? "ok  " : strict ? "FAIL" : "note", p->name, N_POS, V, N_PROMPT, N_GEN, w, at,
           w <= tol ? "within" : "OVER", tol, strict ? "" : " (reported; LLAMA_QUANT_STRICT=1 asserts it)", agen[0],
           agen[1], agen[2], agen[3], same ? "==" : "!=", lgen[0], lgen[1], lgen[2], lgen[3], w32, at32,
           !f ? "not run" : !memcmp(lgen, fgen, sizeof lgen) ? "agrees" : "differs", isa, wg, atg,
           !gl ? "not run" : !memcmp(agen, ggen, sizeof agen) ? "agrees" : "differs");
    free(gl);
    free(a);
    free(b);
    free(f);
    return !pok || (strict && !eok);
}

int main(int argc, char **argv)
{
    if (argc != 6)
        return fprintf(stderr, "usage: llama-quant LIBDIR PRODUCT_TOL LOGIT_TOL SRC.gguf WORKDIR\n"), 2;
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();
    double ptol = atof(argv[2]), tol = atof(argv[3]);
    bool strict = getenv("LLAMA_QUANT_STRICT") && *getenv("LLAMA_QUANT_STRICT") == '1';
    char base[1024];
    snprintf(base, sizeof base, "%s/f32.gguf", argv[5]);
    if (widen(argv[4], base))
        return printf("FAIL cannot write the F32 model %s from %s\n", base, argv[4]), 1;
    /* the prompt: llama.cpp's tokenizer on TEXT (BOS first), its first N_PROMPT ids */
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *vm = llama_model_load_from_file(base, mp);
    int32_t ids[256];
    int n = vm ? llama_tokenize(llama_model_get_vocab(vm), TEXT, (int32_t)strlen(TEXT), ids, 256, true, false) : -1;
    llama_model_free(vm);
    if (n < N_PROMPT)
        return printf("FAIL the prompt is %d tokens, not %d or more\n", n, N_PROMPT), 1;
    /* native is attnscope's default for quantized weights (issue #32) */
    if (strcmp(as_get_activations(), "native"))
        return printf("FAIL attnscope's default arithmetic is %s, not native\n", as_get_activations()), 1;
    int failed = 0;
    for (size_t i = 0; i < sizeof PRESETS / sizeof *PRESETS; i++)
        failed += one_preset(&PRESETS[i], base, argv[5], ids, tol, ptol, strict);
    llama_backend_free();
    printf("%s: %d of %zu presets pass (%s)\n", failed ? "FAIL" : "ok  ",
           (int)(sizeof PRESETS / sizeof *PRESETS) - failed, sizeof PRESETS / sizeof *PRESETS,
           strict ? "every product, and the logits end to end" : "every product; the logits end to end reported");
    return failed ? 1 : 0;
}
