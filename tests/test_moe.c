/* Routed MLPs (mixture of experts) beyond the fixtures' hooks
 * (test_interp.c holds tiny-mixtral and tiny-mixtral-tie to PyTorch at
 * every hook, the experts chosen exactly): the routing's own invariants,
 * expert ablation and routing off against the clean run's values, the
 * 3-D expert tensors run in their stored types, and broken files refused
 * by name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/gguf.h"
#include "attnscope/model.h"
#include "helpers.h"

#define MIXTRAL "fixtures/tiny-mixtral.gguf"
#define QWEN2MOE "fixtures/tiny-qwen2moe.gguf"
#define PROMPT "prompt-ids 1 5 9 30 41 77 120 200 250 270 288 3 17 64"

static int hook(as_session *s, const char *name)
{
    int h = as_program_find_hook(s->prog, name);
    cr_assert_geq(h, 0, "no hook %s", name);
    return h;
}

static const float *row(as_session *s, const char *name, int pos)
{
    return as_capture_row(s->cap, hook(s, name), pos);
}

/* The k chosen are the k largest weights in order (the lower index first
 * among equals), none twice; the gates are their weights over their sum;
 * hook_mlp_out is the gated sum of experts.hook_out; the weights are a
 * softmax of the logits. Over both layers of a 14-token prompt. */
Test(moe, routing_invariants)
{
    as_session *s = open_session(MIXTRAL, 64);
    run_ok(s, PROMPT "; finish");
    char n[96];
    for (int L = 0; L < 2; L++) {
        for (int p = 0; p < 14; p++) {
#define R(suffix) (snprintf(n, sizeof n, "blocks.%d.%s", L, suffix), row(s, n, p))
            const float *lg = R("mlp.hook_router_logits"), *w = R("mlp.hook_expert_weights");
            const float *ix = R("mlp.hook_expert_indices"), *g = R("mlp.hook_expert_gates");
            const float *eo = R("mlp.experts.hook_out"), *mo = R("hook_mlp_out");
#undef R
            double z = 0, mx = lg[0];
            for (int e = 1; e < 4; e++)
                mx = fmax(mx, lg[e]);
            for (int e = 0; e < 4; e++)
                z += exp(lg[e] - mx);
            for (int e = 0; e < 4; e++)
                cr_assert_float_eq(w[e], exp(lg[e] - mx) / z, 1e-6, "layer %d pos %d: weight %d", L, p, e);
            int a = (int)ix[0], b = (int)ix[1];
            cr_assert(a != b && a >= 0 && a < 4 && b >= 0 && b < 4, "layer %d pos %d: experts %d, %d", L, p, a, b);
            for (int e = 0; e < 4; e++) {
                if (e == a || e == b)
                    continue;
                cr_assert(w[e] < w[b] || (w[e] == w[b] && e > b), "layer %d pos %d: %d beats %d", L, p, e, b);
                cr_assert(w[b] <= w[a], "layer %d pos %d: slots out of order", L, p);
            }
            cr_assert_float_eq(g[0], w[a] / (w[a] + w[b]), 1e-6);
            cr_assert_float_eq(g[1], w[b] / (w[a] + w[b]), 1e-6);
            for (int c = 0; c < 32; c++)
                cr_assert_float_eq(mo[c], g[0] * eo[c] + g[1] * eo[32 + c], 1e-5, "layer %d pos %d: mlp_out[%d]", L,
                                   p, c);
        }
    }
    close_session(s);
}

/* Qwen-MoE: the gates are the chosen weights as they are (no
 * renormalisation), hook_routed_out their gated sum of the experts, the
 * shared gate sigmoid(logit), and hook_mlp_out = routed + gate · shared. */
Test(moe, qwen2moe_routing_and_shared_expert)
{
    as_session *s = open_session(QWEN2MOE, 64);
    run_ok(s, PROMPT "; finish");
    char n[96];
    for (int L = 0; L < 2; L++) {
        for (int p = 0; p < 14; p++) {
#define R(suffix) (snprintf(n, sizeof n, "blocks.%d.%s", L, suffix), row(s, n, p))
            const float *w = R("mlp.hook_expert_weights"), *ix = R("mlp.hook_expert_indices");
            const float *g = R("mlp.hook_expert_gates"), *eo = R("mlp.experts.hook_out");
            const float *ro = R("mlp.hook_routed_out"), *gl = R("mlp.shared.hook_gate_logit");
            const float *gs = R("mlp.shared.hook_gate"), *so = R("mlp.shared.hook_out"), *mo = R("hook_mlp_out");
#undef R
            for (int j = 0; j < 2; j++)
                cr_assert_eq(g[j], w[(int)ix[j]], "layer %d pos %d: gate %d is not the weight", L, p, j);
            cr_assert_float_eq(gs[0], 1 / (1 + exp(-gl[0])), 1e-6);
            for (int c = 0; c < 32; c++) {
                cr_assert_float_eq(ro[c], g[0] * eo[c] + g[1] * eo[32 + c], 1e-5);
                cr_assert_float_eq(mo[c], ro[c] + gs[0] * so[c], 1e-5);
            }
        }
    }
    close_session(s);
}

/* ablate expert L.E: the slots where layer 0 chose E give nothing, the
 * routing is the clean run's, and layer 0's MLP output is the clean one
 * without E's gated share (1e-5); route L.E off: layer 0's experts are the
 * top 2 of the clean weights without E, gates renormalised over them. */
Test(moe, ablate_expert_and_route_off)
{
    as_session *clean = open_session(MIXTRAL, 64), *abl = open_session(MIXTRAL, 64), *off = open_session(MIXTRAL, 64);
    run_ok(clean, PROMPT "; finish");
    run_ok(abl, "ablate expert 0.2; " PROMPT "; finish");
    run_ok(off, "route 0.2 off; " PROMPT "; finish");
    int hit = 0, moved = 0;
    for (int p = 0; p < 14; p++) {
        const float *ix = row(clean, "blocks.0.mlp.hook_expert_indices", p);
        const float *g = row(clean, "blocks.0.mlp.hook_expert_gates", p);
        const float *eo = row(clean, "blocks.0.mlp.experts.hook_out", p);
        const float *w = row(clean, "blocks.0.mlp.hook_expert_weights", p);
        cr_assert_eq(memcmp(ix, row(abl, "blocks.0.mlp.hook_expert_indices", p), 2 * sizeof *ix), 0,
                     "pos %d: ablating an expert changed the routing", p);
        const float *mo = row(abl, "blocks.0.hook_mlp_out", p);
        for (int c = 0; c < 32; c++) {
            double want = 0;
            for (int j = 0; j < 2; j++)
                want += (int)ix[j] == 2 ? 0 : g[j] * eo[j * 32 + c];
            cr_assert_float_eq(mo[c], want, 1e-5, "pos %d: ablated mlp_out[%d]", p, c);
        }
        hit += (int)ix[0] == 2 || (int)ix[1] == 2;
        const float *oi = row(off, "blocks.0.mlp.hook_expert_indices", p), *og = row(off, "blocks.0.mlp.hook_expert_gates", p);
        int want[2] = {-1, -1};
        for (int j = 0; j < 2; j++)
            for (int e = 0; e < 4; e++)
                if (e != 2 && e != want[0] && (want[j] < 0 || w[e] > w[want[j]]))
                    want[j] = e;
        cr_assert(oi[0] == want[0] && oi[1] == want[1], "pos %d: routed off, chose %g %g, want %d %d", p, oi[0], oi[1],
                  want[0], want[1]);
        cr_assert_float_eq(og[0], w[want[0]] / (w[want[0]] + w[want[1]]), 1e-6);
        moved += oi[0] != ix[0] || oi[1] != ix[1];
    }
    cr_assert_gt(hit, 0, "the prompt never chose expert 0.2: the test would prove nothing");
    cr_assert_eq(moved, hit, "routing off moved %d tokens, %d had chosen it", moved, hit);
    /* rules_off (compare's clean run) gives the clean values back */
    close_session(clean);
    close_session(abl);
    close_session(off);
}

static double logit_gap(const char *x, const char *y, bool *same_experts)
{
    as_session *a = open_session(x, 64), *b = open_session(y, 64);
    run_ok(a, PROMPT "; finish");
    run_ok(b, PROMPT "; finish");
    int lg = as_program_hook(a->prog, AS_HK_LOGITS, -1), V = a->model->cfg.n_vocab;
    double worst = 0;
    *same_experts = true;
    for (int p = 0; p < 14; p++) {
        for (int v = 0; v < V; v++)
            worst = fmax(worst, fabs(as_capture_row(a->cap, lg, p)[v] - as_capture_row(b->cap, lg, p)[v]));
        for (int L = 0; L < 2; L++) {
            char n[64];
            snprintf(n, sizeof n, "blocks.%d.mlp.hook_expert_indices", L);
            *same_experts &= !memcmp(row(a, n, p), row(b, n, p), 2 * sizeof(float));
        }
    }
    close_session(a);
    close_session(b);
    return worst;
}

/* The experts' 3-D tensors stored as F16 and Q8_0 (the project's own
 * conversions, every expert's matrix with them) run from their stored
 * type, against the same weights decoded to float32 by the reference
 * dequantizer: the same experts chosen and logits within 2e-4 (as the
 * shipped models' typed copies, test_models.c), in a third of the bytes
 * or less for Q8_0. */
Test(moe, expert_tensors_run_in_their_stored_type)
{
    /* float32 activations, to hold Q8_0 to the decoded weights (native, the
     * default for block types, is test_qdot.c's) */
    cr_assert(as_set_activations("f32"));
    as_ggml_type types[] = {AS_GGML_F16, AS_GGML_Q8_0};
    for (int i = 0; i < 2; i++) {
        char copy[] = "/tmp/attnscope-moe-XXXXXX", back[] = "/tmp/attnscope-moe-f32-XXXXXX";
        int fd = mkstemp(copy), fd2 = mkstemp(back);
        cr_assert(fd >= 0 && fd2 >= 0);
        close(fd);
        close(fd2);
        cr_assert_eq(write_typed_copy(MIXTRAL, copy, types[i]), 0);
        cr_assert_eq(write_typed_copy(copy, back, AS_GGML_F32), 0);
        as_session *s = open_session(copy, 0);
        int h = as_program_find_hook(s->prog, "blocks.0.mlp.experts.hook_pre");
        const as_op *op = as_program_producer(s->prog, h);
        cr_assert_eq(op->w.type, types[i], "the experts' matrix is %d, stored %d", op->w.type, types[i]);
        size_t typed = s->model->weight_bytes;
        close_session(s);
        s = open_session(MIXTRAL, 0);
        size_t full = s->model->weight_bytes;
        close_session(s);
        cr_assert_lt(typed, full * (types[i] == AS_GGML_Q8_0 ? 0.3 : 0.52), "%zu bytes, F32 %zu", typed, full);
        bool same;
        double gap = logit_gap(copy, back, &same);
        cr_assert(same, "%s: other experts chosen than with the same weights as F32", as_ggml_type_name(types[i]));
        cr_assert_leq(gap, 2e-4, "%s: %.3g from the same weights decoded to F32", as_ggml_type_name(types[i]), gap);
        unlink(copy);
        unlink(back);
    }
}

typedef struct edit {
    const char *skip_key, *drop, *u32_key;
    uint32_t u32;
    const char *file;    /* NULL: tiny-mixtral */
} edit;

static void load_edited(const edit *e, char *msg, size_t cap)
{
    as_gguf *g;
    as_gguf_writer *w = edit_gguf(e->file ? e->file : MIXTRAL, e->skip_key, e->drop, &g);
    if (e->u32_key)
        as_gguf_writer_set_u32(w, e->u32_key, e->u32);
    load_refused(w, g, msg, cap);
}

Test(moe, broken_files_are_refused_by_name)
{
    char msg[1024];
    load_edited(&(edit){.skip_key = "llama.expert_used_count"}, msg, sizeof msg);
    cr_assert(strstr(msg, "llama.expert_used_count is missing") && strstr(msg, "llama.expert_count = 4"), "%s", msg);
    load_edited(&(edit){.u32_key = "llama.expert_used_count", .u32 = 5}, msg, sizeof msg);
    cr_assert(strstr(msg, "llama.expert_used_count = 5 is out of range (1..llama.expert_count = 4)"), "%s", msg);
    load_edited(&(edit){.u32_key = "llama.expert_used_count", .u32 = 0}, msg, sizeof msg);
    cr_assert(strstr(msg, "llama.expert_used_count = 0 is out of range"), "%s", msg);
    load_edited(&(edit){.u32_key = "llama.expert_count", .u32 = 100000}, msg, sizeof msg);
    cr_assert(strstr(msg, "llama.expert_count = 100000 is out of range (0..512)"), "%s", msg);
    load_edited(&(edit){.u32_key = "llama.expert_count", .u32 = 3}, msg, sizeof msg);
    cr_assert(strstr(msg, "blk.0.ffn_gate_inp.weight") && strstr(msg, "[32, 3]"), "%s", msg);
    load_edited(&(edit){.drop = "blk.1.ffn_down_exps.weight"}, msg, sizeof msg);
    cr_assert(strstr(msg, "tensor 'blk.1.ffn_down_exps.weight' is missing"), "%s", msg);
    load_edited(&(edit){.u32_key = "llama.expert_feed_forward_length", .u32 = 48}, msg, sizeof msg);
    cr_assert(strstr(msg, "blk.0.ffn_gate_exps.weight") && strstr(msg, "[32, 48, 4]"), "%s", msg);
    /* without expert_count the file is a dense llama: its MLP tensors are missing */
    load_edited(&(edit){.skip_key = "llama.expert_count"}, msg, sizeof msg);
    cr_assert(strstr(msg, "blk.0.ffn_gate.weight") && strstr(msg, "missing"), "%s", msg);
    /* Qwen-MoE: its experts and its shared expert are not optional */
    load_edited(&(edit){.file = QWEN2MOE, .skip_key = "qwen2moe.expert_count"}, msg, sizeof msg);
    cr_assert(strstr(msg, "qwen2moe.expert_count is missing or 0"), "%s", msg);
    load_edited(&(edit){.file = QWEN2MOE, .drop = "blk.0.ffn_gate_inp_shexp.weight"}, msg, sizeof msg);
    cr_assert(strstr(msg, "tensor 'blk.0.ffn_gate_inp_shexp.weight' is missing"), "%s", msg);
    load_edited(&(edit){.file = QWEN2MOE, .u32_key = "qwen2moe.expert_shared_feed_forward_length", .u32 = 32}, msg,
                sizeof msg);
    cr_assert(strstr(msg, "blk.0.ffn_gate_shexp.weight") && strstr(msg, "[32, 32]"), "%s", msg);
    /* without expert_feed_forward_length an expert is feed_forward_length / expert_used_count wide
     * (64 / 2 = 32, as llama.cpp): this file's are 16 */
    load_edited(&(edit){.file = QWEN2MOE, .skip_key = "qwen2moe.expert_feed_forward_length"}, msg, sizeof msg);
    cr_assert(strstr(msg, "blk.0.ffn_gate_exps.weight") && strstr(msg, "[32, 32, 4]"), "%s", msg);
}

/* The experts chosen leave as int32 arrays (`dump`, `dump all` and its
 * index.json say so), equal to the capture; float hooks stay float32. */
Test(moe, experts_chosen_are_int32_in_npy)
{
    as_session *s = open_session(MIXTRAL, 64);
    char dir[] = "/tmp/attnscope-moe-dump-XXXXXX", cmd[512], path[600];
    cr_assert(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, PROMPT "; finish; dump blocks.1.mlp.hook_expert_indices %s/one.npy; dump all %s/all", dir,
             dir);
    run_ok(s, cmd);
    const char *files[] = {"one.npy", "all/blocks.1.mlp.hook_expert_indices.npy"};
    for (int f = 0; f < 2; f++) {
        npy a;
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        cr_assert_eq(npy_read(path, &a), 0, "cannot read %s", path);
        cr_assert(a.i, "%s is not int32", path);
        cr_assert(a.ndim == 2 && a.shape[0] == 14 && a.shape[1] == 2, "%s: shape", path);
        for (int p = 0; p < 14; p++)
            for (int j = 0; j < 2; j++)
                cr_assert_eq(a.i[p * 2 + j], (int)row(s, "blocks.1.mlp.hook_expert_indices", p)[j]);
        npy_free(&a);
        unlink(path);
    }
    npy g;
    snprintf(path, sizeof path, "%s/all/blocks.1.mlp.hook_expert_gates.npy", dir);
    cr_assert_eq(npy_read(path, &g), 0);
    cr_assert(!g.i, "the gates are float32");
    npy_free(&g);
    snprintf(path, sizeof path, "%s/all/index.json", dir);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    char *json = calloc(1, 1 << 20);
    size_t n = fread(json, 1, (1 << 20) - 1, f);
    fclose(f);
    cr_assert_gt(n, 0);
    const char *at = strstr(json, "\"blocks.1.mlp.hook_expert_indices\"");
    cr_assert(at && !strncmp(strstr(at, "\"dtype\""), "\"dtype\": \"int32\"", 16), "index.json: %.200s", at);
    at = strstr(json, "\"blocks.1.mlp.hook_expert_gates\"");
    cr_assert(at && !strncmp(strstr(at, "\"dtype\""), "\"dtype\": \"float32\"", 18));
    free(json);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    close_session(s);
}

/* Indices an intervention writes need not name experts: a slot naming
 * none (out of range, NaN, huge) or one an earlier slot names gives
 * nothing, and the hook still leaves as int32 (-1 where no int32 holds
 * the value). Nothing crashes. */
Test(moe, written_indices_that_name_no_expert)
{
    as_session *s = open_session(MIXTRAL, 64);
    int h = hook(s, "blocks.0.mlp.hook_expert_indices");
    float cases[3][2] = {{1, 1}, {7, -3}, {1e30f, NAN}};
    for (int c = 0; c < 3; c++) {
        as_interp_clear_rules(s->it, false);
        as_error err = {{0}};
        as_rule r = {.kind = AS_RULE_SET, .hook = h, .head = -1, .pos = -1, .values = cases[c]};
        cr_assert_eq(as_interp_add_rule(s->it, &r, 2, &err), AS_OK, "%s", err.msg);
        run_ok(s, PROMPT "; finish");
        for (int p = 0; p < 14; p++) {
            const float *eo = row(s, "blocks.0.mlp.experts.hook_out", p), *mo = row(s, "blocks.0.hook_mlp_out", p);
            const float *g = row(s, "blocks.0.mlp.hook_expert_gates", p);
            for (int i = c == 0 ? 32 : 0; i < 64; i++)
                cr_assert_eq(eo[i], 0.0f, "case %d pos %d: slot value %d is %g", c, p, i, eo[i]);
            if (c > 0)
                for (int i = 0; i < 32; i++)
                    cr_assert_eq(mo[i], 0.0f, "case %d pos %d: mlp_out %g", c, p, mo[i]);
            cr_assert(isfinite(g[0]) && isfinite(g[1]), "case %d: gates %g %g", c, g[0], g[1]);
        }
    }
    char path[] = "/tmp/attnscope-moe-idx-XXXXXX.npy", cmd[128];
    int fd = mkstemps(path, 4);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "dump blocks.0.mlp.hook_expert_indices %s", path);
    run_ok(s, cmd);
    npy a;
    cr_assert_eq(npy_read(path, &a), 0);
    cr_assert(a.i && a.i[0] == -1 && a.i[1] == -1, "1e30 and NaN as int32: %d %d", a.i ? a.i[0] : 0, a.i ? a.i[1] : 0);
    npy_free(&a);
    unlink(path);
    close_session(s);
}

/* `experts LAYER` on the PyTorch reference's prompt (tests/fixtures/
 * tiny-mixtral): per expert the times chosen and the load equal the counts
 * of the reference's hook_expert_indices exactly, the mean gate the mean
 * of the reference's hook_expert_gates over those slots (printed to 3
 * decimals: within 6e-4), and the first token listed was taken as often
 * as the reference's most frequent token for that expert. */
Test(moe, experts_table_matches_the_reference_routing)
{
    npy t;
    cr_assert_eq(npy_read("fixtures/tiny-mixtral/tokens.npy", &t), 0);
    int n = (int)t.count;
    char prompt[512];
    size_t o = (size_t)snprintf(prompt, sizeof prompt, "prompt-ids");
    int32_t tok[64];
    cr_assert_leq(n, 64);
    for (int i = 0; i < n; i++) {
        tok[i] = t.i ? t.i[i] : (int32_t)t.f[i];
        o += (size_t)snprintf(prompt + o, sizeof prompt - o, " %d", tok[i]);
    }
    npy_free(&t);
    as_session *s = open_session(MIXTRAL, 64);
    run_ok(s, prompt);
    run_ok(s, "finish");
    for (int L = 0; L < 2; L++) {
        char path[128], cmd[32];
        npy ix, g;
        snprintf(path, sizeof path, "fixtures/tiny-mixtral/blocks.%d.mlp.hook_expert_indices.npy", L);
        cr_assert_eq(npy_read(path, &ix), 0);
        snprintf(path, sizeof path, "fixtures/tiny-mixtral/blocks.%d.mlp.hook_expert_gates.npy", L);
        cr_assert_eq(npy_read(path, &g), 0);
        int k = (int)ix.shape[ix.ndim - 1];
        FILE *saved = s->out, *tmp = tmpfile();
        s->out = tmp;
        snprintf(cmd, sizeof cmd, "experts %d", L);
        char msg[256];
        int rc = run_cmd(s, cmd, msg, sizeof msg);
        s->out = saved;
        cr_assert_eq(rc, AS_OK, "%s", msg);
        rewind(tmp);
        char line[512];
        int seen = 0;
        while (fgets(line, sizeof line, tmp)) {
            int e, chosen, top;
            float pct, gate;
            char rest[400];
            if (sscanf(line, " %d %f%% %d %f %399[^\n]", &e, &pct, &chosen, &gate, rest) != 5)
                continue;
            cr_assert(e >= 0 && e < 4);
            int want = 0, cnt[64] = {0}, most = 0;
            double gs = 0;
            for (int p = 0; p < n; p++)
                for (int j = 0; j < k; j++) {
                    int ej = ix.i ? ix.i[p * k + j] : (int)ix.f[p * k + j];
                    if (ej != e)
                        continue;
                    want++;
                    gs += g.f[p * k + j];
                    for (int q = 0; q <= p; q++)
                        if (tok[q] == tok[p]) {
                            cnt[q]++; /* counted at the token's first position */
                            if (cnt[q] > most)
                                most = cnt[q];
                            break;
                        }
                }
            cr_assert_eq(chosen, want, "layer %d expert %d: chosen %d, reference %d", L, e, chosen, want);
            cr_assert_float_eq(pct, 100.0 * want / n, 0.051, "layer %d expert %d: load %.1f%%", L, e, pct);
            cr_assert_float_eq(gate, gs / want, 6e-4, "layer %d expert %d: gate %.3f, reference %.4f", L, e, gate,
                               gs / want);
            char *x = strstr(rest, "×");
            cr_assert(x && sscanf(x + strlen("×"), "%d", &top) == 1, "layer %d expert %d: %s", L, e, rest);
            cr_assert_eq(top, most, "layer %d expert %d: first token taken %d times, reference's most %d", L, e, top,
                         most);
            seen++;
        }
        fclose(tmp);
        cr_assert_eq(seen, 4, "layer %d: %d expert rows", L, seen);
        npy_free(&ix);
        npy_free(&g);
    }
    char msg[256];
    cr_assert_eq(run_cmd(s, "experts 9", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "layer"), "%s", msg);
    close_session(s);
    as_session *d = open_session("fixtures/tiny-llama.gguf", 64);
    run_ok(d, "prompt the cat; finish");
    cr_assert_eq(run_cmd(d, "experts", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "no routed MLPs"), "%s", msg);
    close_session(d);
}

/* Qwen-MoE's shared expert in `experts LAYER`: its gate's mean, least
 * and largest over the tokens equal the PyTorch reference's
 * mlp.shared.hook_gate (printed to 3 decimals: within 6e-4). */
Test(moe, experts_reports_the_shared_gate_as_the_reference)
{
    npy t, g;
    cr_assert_eq(npy_read("fixtures/tiny-qwen2moe/tokens.npy", &t), 0);
    char prompt[512];
    size_t o = (size_t)snprintf(prompt, sizeof prompt, "prompt-ids");
    for (size_t i = 0; i < t.count; i++)
        o += (size_t)snprintf(prompt + o, sizeof prompt - o, " %d", t.i ? t.i[i] : (int)t.f[i]);
    as_session *s = open_session(QWEN2MOE, 64);
    run_ok(s, prompt);
    run_ok(s, "finish");
    for (int L = 0; L < 2; L++) {
        char path[128], cmd[32], msg[256], line[512];
        snprintf(path, sizeof path, "fixtures/tiny-qwen2moe/blocks.%d.mlp.shared.hook_gate.npy", L);
        cr_assert_eq(npy_read(path, &g), 0);
        cr_assert_eq(g.count, t.count, "one gate a token");
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < g.count; i++) {
            sum += g.f[i];
            lo = fmin(lo, g.f[i]);
            hi = fmax(hi, g.f[i]);
        }
        FILE *saved = s->out, *tmp = tmpfile();
        s->out = tmp;
        snprintf(cmd, sizeof cmd, "experts %d", L);
        int rc = run_cmd(s, cmd, msg, sizeof msg);
        s->out = saved;
        cr_assert_eq(rc, AS_OK, "%s", msg);
        rewind(tmp);
        bool found = false;
        while (fgets(line, sizeof line, tmp)) {
            float m, a, b;
            if (sscanf(line, " shared expert: every token, gate mean %f (%f to %f)", &m, &a, &b) != 3)
                continue;
            found = true;
            cr_assert_float_eq(m, sum / (double)g.count, 6e-4, "layer %d: mean %.3f", L, m);
            cr_assert_float_eq(a, lo, 6e-4, "layer %d: least %.3f", L, a);
            cr_assert_float_eq(b, hi, 6e-4, "layer %d: largest %.3f", L, b);
        }
        fclose(tmp);
        cr_assert(found, "layer %d: no shared expert line", L);
        npy_free(&g);
    }
    npy_free(&t);
    close_session(s);
}
