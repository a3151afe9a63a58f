#include "program_build.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TransformerLens names: top-level hooks whole, block hooks after the
 * block's scope ("blocks.3" + "." + suffix). */
static const char *const hook_suffix[AS_HK_COUNT] = {
    [AS_HK_EMBED] = "hook_embed",
    [AS_HK_POS_EMBED] = "hook_pos_embed",
    [AS_HK_RESID_PRE] = "hook_resid_pre",
    [AS_HK_LN1_SCALE] = "ln1.hook_scale",
    [AS_HK_LN1_NORMALIZED] = "ln1.hook_normalized",
    [AS_HK_Q] = "attn.hook_q",
    [AS_HK_K] = "attn.hook_k",
    [AS_HK_V] = "attn.hook_v",
    [AS_HK_ROT_Q] = "attn.hook_rot_q",
    [AS_HK_ROT_K] = "attn.hook_rot_k",
    [AS_HK_ATTN_SCORES] = "attn.hook_attn_scores",
    [AS_HK_PATTERN] = "attn.hook_pattern",
    [AS_HK_Z] = "attn.hook_z",
    [AS_HK_ATTN_OUT] = "hook_attn_out",
    [AS_HK_RESID_MID] = "hook_resid_mid",
    [AS_HK_LN2_SCALE] = "ln2.hook_scale",
    [AS_HK_LN2_NORMALIZED] = "ln2.hook_normalized",
    [AS_HK_MLP_PRE] = "mlp.hook_pre",
    [AS_HK_MLP_PRE_LINEAR] = "mlp.hook_pre_linear",
    [AS_HK_MLP_POST] = "mlp.hook_post",
    [AS_HK_MLP_OUT] = "hook_mlp_out",
    [AS_HK_RESID_POST] = "hook_resid_post",
    [AS_HK_LNF_SCALE] = "ln_final.hook_scale",
    [AS_HK_LNF_NORMALIZED] = "ln_final.hook_normalized",
    [AS_HK_LOGITS] = "unembed.hook_out",
    [AS_HK_Q_NORM_SCALE] = "attn.q_norm.hook_scale",
    [AS_HK_Q_NORM_NORMALIZED] = "attn.q_norm.hook_normalized",
    [AS_HK_K_NORM_SCALE] = "attn.k_norm.hook_scale",
    [AS_HK_K_NORM_NORMALIZED] = "attn.k_norm.hook_normalized",
    /* TransformerLens has no hook between the sublayer and its post-norm:
     * the same grammar, "the module's output" (as unembed.hook_out). */
    [AS_HK_ATTN_RESULT] = "attn.hook_out",
    [AS_HK_LN1_POST_SCALE] = "ln1_post.hook_scale",
    [AS_HK_LN1_POST_NORMALIZED] = "ln1_post.hook_normalized",
    [AS_HK_MLP_RESULT] = "mlp.hook_out",
    [AS_HK_LN2_POST_SCALE] = "ln2_post.hook_scale",
    [AS_HK_LN2_POST_NORMALIZED] = "ln2_post.hook_normalized",
    /* HookedEncoder's, under the scopes "embed" and "mlm_head"; its MLM
     * head hooks only its norm: the dense layer and the activation take
     * the MLP's grammar. The pooled vector has no TransformerLens name. */
    [AS_HK_TYPE_EMBED] = "hook_token_type_embed",
    [AS_HK_EMBED_LN_SCALE] = "ln.hook_scale",
    [AS_HK_EMBED_LN_NORMALIZED] = "ln.hook_normalized",
    [AS_HK_EMBED_SUM] = "hook_sum", /* what embed.ln normalizes */
    [AS_HK_HEAD_PRE] = "hook_pre",
    [AS_HK_HEAD_POST] = "hook_post",
    [AS_HK_POOLED] = "pooler.hook_out",
    /* HookedEncoderDecoder's (T5Block, encoder_final_ln) */
    [AS_HK_CROSS_ATTN_OUT] = "hook_cross_attn_out",
    [AS_HK_RESID_MID_CROSS] = "hook_resid_mid_cross",
    [AS_HK_LN3_SCALE] = "ln3.hook_scale",
    [AS_HK_LN3_NORMALIZED] = "ln3.hook_normalized",
    [AS_HK_ENC_LNF_SCALE] = "encoder_final_ln.hook_scale",
    [AS_HK_ENC_LNF_NORMALIZED] = "encoder_final_ln.hook_normalized",
    [AS_HK_PATCH_EMBED] = "hook_patch_embed", /* under "embed" */
    /* no TransformerLens hook: HF T5's name for it (position_bias), in its grammar */
    [AS_HK_ATTN_BIAS] = "attn.hook_position_bias",
    /* a routed MLP: TransformerLens's MoE names (hook_expert_weights,
     * hook_expert_indices), the router's logits and the gates beside
     * them, each chosen expert's activations under mlp.experts */
    [AS_HK_ROUTER_LOGITS] = "mlp.hook_router_logits",
    [AS_HK_EXPERT_WEIGHTS] = "mlp.hook_expert_weights",
    [AS_HK_EXPERT_INDICES] = "mlp.hook_expert_indices",
    [AS_HK_EXPERT_GATES] = "mlp.hook_expert_gates",
    [AS_HK_EXPERTS_PRE] = "mlp.experts.hook_pre",
    [AS_HK_EXPERTS_PRE_LINEAR] = "mlp.experts.hook_pre_linear",
    [AS_HK_EXPERTS_POST] = "mlp.experts.hook_post",
    [AS_HK_EXPERTS_OUT] = "mlp.experts.hook_out",
    [AS_HK_ROUTED_OUT] = "mlp.hook_routed_out",
    [AS_HK_SHARED_PRE] = "mlp.shared.hook_pre",
    [AS_HK_SHARED_PRE_LINEAR] = "mlp.shared.hook_pre_linear",
    [AS_HK_SHARED_POST] = "mlp.shared.hook_post",
    [AS_HK_SHARED_OUT] = "mlp.shared.hook_out",
    [AS_HK_SHARED_GATE_LOGIT] = "mlp.shared.hook_gate_logit",
    [AS_HK_SHARED_GATE] = "mlp.shared.hook_gate",
    /* multi-head latent attention: TransformerLens has none; the same grammar, the
     * latents and norms named after llama.cpp's tensors (attn_q_a_norm, attn_kv_a_norm) */
    [AS_HK_Q_LATENT] = "attn.hook_q_latent",
    [AS_HK_Q_A_NORM_SCALE] = "attn.q_a_norm.hook_scale",
    [AS_HK_Q_A_NORM_NORMALIZED] = "attn.q_a_norm.hook_normalized",
    [AS_HK_KV_LATENT] = "attn.hook_kv_latent",
    [AS_HK_KV_A_NORM_SCALE] = "attn.kv_a_norm.hook_scale",
    [AS_HK_KV_A_NORM_NORMALIZED] = "attn.kv_a_norm.hook_normalized",
    [AS_HK_K_PE] = "attn.hook_k_pe",
    [AS_HK_KV] = "attn.hook_kv",
    [AS_HK_K_NOPE] = "attn.hook_k_nope",
    [AS_HK_Q_ABSORBED] = "attn.hook_q_absorbed",
    [AS_HK_Q_PE] = "attn.hook_rot_q_pe",
    [AS_HK_Q_MQA] = "attn.hook_q_mqa",
    [AS_HK_Z_LATENT] = "attn.hook_z_latent",
    [AS_HK_HEAD_RESULT] = "attn.hook_result",
    [AS_HK_ATTN_IN] = "hook_attn_in",
    [AS_HK_MLP_IN] = "hook_mlp_in",
};

/* A hook's name and shape per position, for messages: "blocks.0.attn.hook_q [4, 16]". */
const char *as_hook_desc(const as_program *p, int hook, char *buf, size_t cap)
{
    if (hook < 0 || hook >= p->n_hooks) {
        snprintf(buf, cap, "hook %d (none)", hook);
        return buf;
    }
    const as_hook *h = &p->hooks[hook];
    if (h->n_dims > 1)
        snprintf(buf, cap, "%s [%d, %d]", h->name, h->dims[0], h->dims[1]);
    else
        snprintf(buf, cap, "%s [%d]", h->name, h->width);
    return buf;
}

/* A builder's mistake (an architecture file asked for shapes that do not
 * fit): the build fails, and the first mistake's message says why, naming
 * the op and the shapes. */
__attribute__((format(printf, 2, 3))) static void mistake(as_program *p, const char *fmt, ...)
{
    if (!p->failed) { /* the first one; after running out of memory, shapes may be anything */
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->mistake, sizeof p->mistake, fmt, ap);
        va_end(ap);
    }
    p->failed = true;
}

/* Room for one more element of an array that grows by doubling; false
 * (and the program marked failed) when memory runs out. */
/* The array with room for element n (doubled when full): the new
 * pointer, which the caller stores, or NULL with p->failed set (the old
 * array kept). Any pointer into the old array is stale after a growth. */
static void *grow(as_program *p, void *arr, int n, int *cap, size_t size)
{
    if (n < *cap)
        return arr;
    int want = *cap ? 2 * *cap : 64;
    void *a = realloc(arr, (size_t)want * size);
    if (!a) {
        p->failed = true;
        return NULL;
    }
    *cap = want;
    return a;
}

int as_program_add_stream(as_program *p, const char *name, as_input input, int n_ctx, bool causal)
{
    if (p->n_streams == AS_MAX_STREAMS) {
        mistake(p, "stream \"%s\": a program has at most %d streams", name, AS_MAX_STREAMS);
        return 0;
    }
    as_stream *s = &p->streams[p->n_streams];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->input = input;
    s->n_ctx = n_ctx;
    s->causal = causal;
    p->cur_stream = p->n_streams;
    return p->n_streams++;
}

void as_program_scope(as_program *p, int layer)
{
    if (layer < 0)
        p->scope[0] = '\0';
    else
        snprintf(p->scope, sizeof p->scope, "blocks.%d", layer);
}

void as_program_scope_name(as_program *p, const char *name)
{
    snprintf(p->scope, sizeof p->scope, "%s", name ? name : "");
}

void as_program_rename(as_program *p, int hook, const char *name)
{
    if (hook >= 0 && hook < p->n_hooks)
        snprintf(p->hooks[hook].name, sizeof p->hooks[hook].name, "%s", name);
}

static as_site site_of(const as_program *p, as_hook_kind kind)
{
    switch (kind) {
    case AS_HK_Q: case AS_HK_K: case AS_HK_V: case AS_HK_ROT_Q: case AS_HK_ROT_K:
    case AS_HK_ATTN_SCORES: case AS_HK_PATTERN: case AS_HK_Z:
    case AS_HK_Q_NORM_SCALE: case AS_HK_Q_NORM_NORMALIZED: case AS_HK_K_NORM_SCALE: case AS_HK_K_NORM_NORMALIZED:
    case AS_HK_ATTN_RESULT: case AS_HK_ATTN_BIAS:
    case AS_HK_Q_LATENT: case AS_HK_Q_A_NORM_SCALE: case AS_HK_Q_A_NORM_NORMALIZED: case AS_HK_KV_LATENT:
    case AS_HK_KV_A_NORM_SCALE: case AS_HK_KV_A_NORM_NORMALIZED: case AS_HK_K_PE: case AS_HK_KV: case AS_HK_K_NOPE:
    case AS_HK_Q_ABSORBED: case AS_HK_Q_PE: case AS_HK_Q_MQA: case AS_HK_Z_LATENT: case AS_HK_HEAD_RESULT:
        return p->cur_site == AS_SITE_CROSS_ATTN ? AS_SITE_CROSS_ATTN : AS_SITE_SELF_ATTN;
    case AS_HK_MLP_PRE: case AS_HK_MLP_PRE_LINEAR: case AS_HK_MLP_POST: case AS_HK_MLP_RESULT:
        return p->cur_site == AS_SITE_NONE ? AS_SITE_MLP : p->cur_site;
    case AS_HK_ROUTER_LOGITS: case AS_HK_EXPERT_WEIGHTS: case AS_HK_EXPERT_INDICES: case AS_HK_EXPERT_GATES:
    case AS_HK_ROUTED_OUT:
        return AS_SITE_MLP;
    case AS_HK_SHARED_PRE: case AS_HK_SHARED_PRE_LINEAR: case AS_HK_SHARED_POST: case AS_HK_SHARED_OUT:
    case AS_HK_SHARED_GATE_LOGIT: case AS_HK_SHARED_GATE:
        return AS_SITE_SHARED_EXPERT;
    case AS_HK_EXPERTS_PRE: case AS_HK_EXPERTS_PRE_LINEAR: case AS_HK_EXPERTS_POST: case AS_HK_EXPERTS_OUT:
        return AS_SITE_ROUTED_EXPERT;
    default:
        return AS_SITE_NONE;
    }
}

int as_program_add_hook(as_program *p, as_hook_kind kind, int layer, as_hook_class klass,
                        int n_dims, int d0, int d1)
{
    as_hook *hooks = grow(p, p->hooks, p->n_hooks, &p->cap_hooks, sizeof *p->hooks);
    if (!hooks)
        return 0;
    p->hooks = hooks;
    as_hook *h = &p->hooks[p->n_hooks];
    memset(h, 0, sizeof *h);
    h->site = site_of(p, kind);
    /* a cross-attention site's hooks: cross_attn.hook_q where self-attention has attn.hook_q */
    const char *cross = h->site == AS_SITE_CROSS_ATTN && !strncmp(hook_suffix[kind], "attn.", 5) ? "cross_" : "";
    if (p->scope[0])
        snprintf(h->name, sizeof h->name, "%s.%s%s", p->scope, cross, hook_suffix[kind]);
    else
        snprintf(h->name, sizeof h->name, "%s%s", cross, hook_suffix[kind]);
    h->kind = kind;
    h->layer = layer;
    h->stream = p->cur_stream;
    h->dtype = AS_DT_F32;
    h->klass = klass;
    h->n_dims = n_dims;
    h->dims[0] = d0;
    h->dims[1] = n_dims > 1 ? d1 : 1;
    h->width = d0 * h->dims[1];
    h->attn = -1;
    return p->n_hooks++;
}

as_op *as_program_add_op(as_program *p, as_op_kind kind, int layer, int out, int in0, int in1,
                         const char *text)
{
    as_op *ops = grow(p, p->ops, p->n_ops, &p->cap_ops, sizeof *p->ops);
    if (!ops)
        return &p->dead_op;
    p->ops = ops;
    as_op *op = &p->ops[p->n_ops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->layer = layer;
    op->out = out;
    op->in[0] = in0;
    op->in[1] = in1;
    op->in[2] = -1;
    op->attn = -1;
    snprintf(op->text, sizeof op->text, "%s", text);
    return op;
}

int as_program_add_norm(as_program *p, as_hook_kind scale_kind, int layer, int in, const float *w,
                        const float *b, as_norm_kind norm, float eps, const char *name)
{
    int d = p->hooks[in].width;
    /* hook_attn_in / hook_mlp_in (asked for): the residual stream a pre-norm block's ln1 and ln2
     * read, copied into a hook of its own that the norm reads instead (TransformerLens's
     * use_attn_in, use_hook_mlp_in); one stream only, where ln2 is the MLP's norm */
    as_hook_kind in_kind = p->hooks[in].kind;
    if ((p->opts & AS_PROG_IN_HOOKS) && p->n_streams == 1 && layer >= 0 &&
        ((scale_kind == AS_HK_LN1_SCALE && in_kind == AS_HK_RESID_PRE) ||
         (scale_kind == AS_HK_LN2_SCALE && in_kind == AS_HK_RESID_MID))) {
        bool attn = scale_kind == AS_HK_LN1_SCALE;
        int c = as_program_add_hook(p, attn ? AS_HK_ATTN_IN : AS_HK_MLP_IN, layer, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_COPY, layer, c, in, -1, attn ? "attn_in = resid_pre" : "mlp_in = resid_mid");
        in = c;
    }
    bool rms = norm == AS_NORM_RMS;
    char text[64];
    int s = as_program_add_hook(p, scale_kind, layer, AS_CLASS_ESSENTIAL, 1, 1, 0);
    snprintf(text, sizeof text, rms ? "%s scale = sqrt(mean(x²) + eps)" : "%s scale = sqrt(var + eps)",
             name);
    as_op *op = as_program_add_op(p, AS_OP_NORM_SCALE, layer, s, in, -1, text);
    op->norm = norm, op->eps = eps, op->n_in = op->n_out = d;
    int n = as_program_add_hook(p, scale_kind + 1, layer, AS_CLASS_RESID, 1, d, 0);
    snprintf(text, sizeof text, rms ? "%s = x / scale * w" : "%s = (x - mean) / scale * w + b", name);
    op = as_program_add_op(p, AS_OP_NORM_APPLY, layer, n, in, s, text);
    op->nw = w, op->b = b, op->norm = norm, op->eps = eps, op->n_in = op->n_out = d;
    return n;
}

int as_program_add_head_norm(as_program *p, as_hook_kind scale_kind, int layer, int in, const float *w,
                             as_norm_kind norm, float eps, const char *name)
{
    const as_hook *x = &p->hooks[in];
    int H = x->dims[0], dh = x->dims[1];
    bool rms = norm == AS_NORM_RMS;
    char text[64];
    int s = as_program_add_hook(p, scale_kind, layer, AS_CLASS_ESSENTIAL, 2, H, 1);
    snprintf(text, sizeof text, rms ? "%s scale = sqrt(mean(x²) + eps), per head" : "%s scale = sqrt(var + eps), per head",
             name);
    as_op *op = as_program_add_op(p, AS_OP_NORM_SCALE, layer, s, in, -1, text);
    op->norm = norm, op->eps = eps, op->n_in = op->n_out = dh;
    int n = as_program_add_hook(p, scale_kind + 1, layer, p->hooks[in].klass, 2, H, dh);
    snprintf(text, sizeof text, rms ? "%s = x / scale * w, per head" : "%s = (x - mean) / scale * w, per head", name);
    op = as_program_add_op(p, AS_OP_NORM_APPLY, layer, n, in, s, text);
    op->nw = w, op->norm = norm, op->eps = eps, op->n_in = op->n_out = dh;
    return n;
}

int as_program_add_linear(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in,
                          const as_weight *w, const float *b, int n_dims, int d0, int d1, const char *text)
{
    /* attn.hook_result (asked for): the output projection of an attention site's z as each head
     * through its columns of W_O, then their sum and the bias (TransformerLens's use_attn_result) */
    if ((p->opts & AS_PROG_ATTN_RESULT) && p->hooks[in].kind == AS_HK_Z && p->hooks[in].n_dims == 2 &&
        n_dims == 1 && d0 == w->rows && w->cols == p->hooks[in].width) {
        int H = p->hooks[in].dims[0];
        int r = as_program_add_hook(p, AS_HK_HEAD_RESULT, layer, AS_CLASS_RESID, 2, H, d0);
        as_op *op = as_program_add_op(p, AS_OP_HEAD_OUT, layer, r, in, -1, "result = z_h · W_O[:, h]ᵀ per head");
        op->w = *w, op->n_in = w->cols, op->n_out = d0;
        int h = as_program_add_hook(p, kind, layer, klass, 1, d0, 0);
        op = as_program_add_op(p, AS_OP_HEAD_SUM, layer, h, r, -1, text);
        op->b = b, op->n_in = H * d0, op->n_out = d0;
        return h;
    }
    int h = as_program_add_hook(p, kind, layer, klass, n_dims, d0, d1);
    as_op *op = as_program_add_op(p, AS_OP_LINEAR, layer, h, in, -1, text);
    op->w = *w, op->b = b, op->n_in = w->cols, op->n_out = p->hooks[h].width;
    if (op->n_out != w->rows) { /* a builder's mistake, caught by the tests */
        char a[96];
        mistake(p, "linear \"%s\": %s (%d values) from a matrix of %d rows x %d columns", text,
                as_hook_desc(p, h, a, sizeof a), op->n_out, w->rows, w->cols);
    }
    return h;
}

int as_program_add_rope(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in,
                        const as_rope_spec *rope, const char *text)
{
    /* the input's shape, read before adding a hook moves the array */
    int groups = p->hooks[in].dims[0], width = p->hooks[in].dims[1];
    int h = as_program_add_hook(p, kind, layer, klass, 2, groups, width);
    as_op *op = as_program_add_op(p, AS_OP_ROPE, layer, h, in, -1, text);
    op->rope = *rope;
    if (rope->dim <= 0 || rope->dim % 2 || rope->offset < 0 || rope->offset + rope->dim > width) {
        char a[96]; /* a builder's mistake, caught by the tests */
        mistake(p, "rope \"%s\": %d dims rotated from dim %d of %s's heads of %d", text, rope->dim, rope->offset,
                as_hook_desc(p, in, a, sizeof a), width);
    }
    return h;
}

int as_program_add_slice(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in, int groups,
                         int col0, int width, const char *text)
{
    int wx = p->hooks[in].width; /* read before adding a hook moves the array */
    int h = as_program_add_hook(p, kind, layer, klass, 2, groups, width);
    as_op *op = as_program_add_op(p, AS_OP_SLICE, layer, h, in, -1, text);
    op->col0 = col0;
    if (groups < 1 || wx % groups || col0 < 0 || col0 + width > wx / groups) {
        char a[96]; /* a builder's mistake, caught by the tests */
        mistake(p, "slice \"%s\": columns %d..%d of %d groups of %s (%d values)", text, col0, col0 + width - 1,
                groups, as_hook_desc(p, in, a, sizeof a), wx);
    }
    return h;
}

int as_program_add_concat(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int a, int b,
                          const char *text)
{
    const as_hook *ha = &p->hooks[a], *hb = &p->hooks[b];
    int G = ha->n_dims > 1 ? ha->dims[0] : 1, Gb = hb->n_dims > 1 ? hb->dims[0] : 1;
    int w = ha->width / G + hb->width / Gb;
    int h = as_program_add_hook(p, kind, layer, klass, 2, G, w);
    as_program_add_op(p, AS_OP_CONCAT, layer, h, a, b, text);
    if (Gb != 1 && Gb != G) {
        char da[96], db[96];
        mistake(p, "concat \"%s\": %s has %d groups, %s %d (one, or as many)", text, as_hook_desc(p, a, da, sizeof da),
                G, as_hook_desc(p, b, db, sizeof db), Gb);
    }
    return h;
}

int as_program_add_head_linear(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in, int groups,
                               const as_weight *w, int n_out, int col0, const char *text)
{
    int wx = p->hooks[in].width;
    int h = as_program_add_hook(p, kind, layer, klass, 2, groups, n_out);
    as_op *op = as_program_add_op(p, AS_OP_HEAD_LINEAR, layer, h, in, -1, text);
    op->w = *w, op->n_in = w->cols, op->n_out = n_out, op->col0 = col0;
    if (groups < 1 || wx % groups || col0 < 0 || col0 + w->cols > wx / groups || w->rows != groups * n_out) {
        char a[96]; /* a builder's mistake, caught by the tests */
        mistake(p, "head_linear \"%s\": %d groups of %s (%d values) from column %d, a stack of %d rows x %d columns "
                   "for %d outputs a group", text, groups, as_hook_desc(p, in, a, sizeof a), wx, col0, w->rows, w->cols,
                n_out);
    }
    return h;
}

void as_program_set_kind(as_program *p, int hook, as_hook_kind kind)
{
    as_hook *h = &p->hooks[hook];
    h->kind = kind;
    const char *cross = h->site == AS_SITE_CROSS_ATTN && !strncmp(hook_suffix[kind], "attn.", 5) ? "cross_" : "";
    if (p->scope[0])
        snprintf(h->name, sizeof h->name, "%s.%s%s", p->scope, cross, hook_suffix[kind]);
    else
        snprintf(h->name, sizeof h->name, "%s%s", cross, hook_suffix[kind]);
}

int as_program_add_attention(as_program *p, const as_attn *site, const char *scores_text)
{
    as_attn *attn = grow(p, p->attn, p->n_attn, &p->cap_attn, sizeof *p->attn);
    if (!attn)
        return 0;
    p->attn = attn;
    int a = p->n_attn++, H = site->n_head, layer = site->layer;
    as_attn *s = &p->attn[a];
    *s = *site;
    s->site = p->cur_site == AS_SITE_CROSS_ATTN ? AS_SITE_CROSS_ATTN : AS_SITE_SELF_ATTN;
    s->q_stream = p->hooks[s->q].stream;
    s->kv_stream = p->hooks[s->k].stream;
    p->hooks[s->k].in_kv_cache = p->hooks[s->v].in_kv_cache = true; /* read back by later positions */
    s->scores = as_program_add_hook(p, AS_HK_ATTN_SCORES, layer, AS_CLASS_SCORES, 1, H, 0);
    as_op *op = as_program_add_op(p, AS_OP_SCORES, layer, s->scores, s->q, s->k, scores_text);
    op->attn = a;
    s->pattern = as_program_add_hook(p, AS_HK_PATTERN, layer, AS_CLASS_PATTERN, 1, H, 0);
    op = as_program_add_op(p, AS_OP_SOFTMAX, layer, s->pattern, s->scores, -1, "pattern = softmax(scores)");
    op->attn = a;
    s->z = as_program_add_hook(p, AS_HK_Z, layer, AS_CLASS_HEADS, 2, H, s->d_v);
    op = as_program_add_op(p, AS_OP_MIX, layer, s->z, s->pattern, s->v, "z = pattern · v");
    op->attn = a;
    if (p->failed)
        return 0;
    for (int h = s->scores; h <= s->pattern; h++) {
        p->hooks[h].is_attn = true;
        p->hooks[h].attn = a;
    }
    if (s->bias >= 0) { /* laid out as the site's scores */
        p->hooks[s->bias].is_attn = true;
        p->hooks[s->bias].attn = a;
    }
    return s->z;
}

int as_program_add_sum3(as_program *p, as_hook_kind kind, int layer, int a, int b, int c, const char *text)
{
    int h = as_program_add_hook(p, kind, layer, AS_CLASS_RESID, 1, p->hooks[a].width, 0);
    as_program_add_op(p, AS_OP_ADD, layer, h, a, b, text)->in[2] = c;
    return h;
}

int as_program_add_sum(as_program *p, as_hook_kind kind, int layer, int a, int b, const char *text)
{
    int h = as_program_add_hook(p, kind, layer, AS_CLASS_RESID, 1, p->hooks[a].width, 0);
    as_program_add_op(p, AS_OP_ADD, layer, h, a, b, text);
    return h;
}

int as_program_add_pool(as_program *p, int in, as_pooling how) { return as_program_add_pool_l2(p, in, how, false); }

int as_program_add_pool_l2(as_program *p, int in, as_pooling how, bool l2)
{
    static const char *const text[][2] = {
        [AS_POOL_MEAN] = {"pooled = mean of the positions", "pooled = mean of the positions, L2-normalized"},
        [AS_POOL_CLS] = {"pooled = first position (CLS)", "pooled = first position, L2-normalized"},
        [AS_POOL_LAST] = {"pooled = last position", "pooled = last position, L2-normalized"},
        [AS_POOL_MAX] = {"pooled = max over the positions", "pooled = max over positions, L2-normalized"},
        [AS_POOL_MEAN_SQRT_LEN] = {"pooled = sum / sqrt(positions)", "pooled = sum / sqrt(n), L2-normalized"}};
    /* the model's output, like logits: kept before residual copies */
    int h = as_program_add_hook(p, AS_HK_POOLED, -1, AS_CLASS_LOGITS, 1, p->hooks[in].width, 0);
    if (how != AS_POOL_MEAN && how != AS_POOL_CLS && how != AS_POOL_LAST && how != AS_POOL_MAX &&
        how != AS_POOL_MEAN_SQRT_LEN) {
        char a[96]; /* a builder's mistake: none and rank have no pooled vector here */
        mistake(p, "pool of %s: pooling %d gives no pooled vector", as_hook_desc(p, in, a, sizeof a), (int)how);
        return h;
    }
    as_op *op = as_program_add_op(p, AS_OP_POOL, -1, h, in, -1, text[how][l2]);
    op->pool = how;
    op->pool_l2 = l2;
    op->n_in = op->n_out = p->hooks[in].width;
    p->pooled = h;
    p->pooling = how;
    p->pooled_l2 = l2;
    return h;
}

int as_program_add_patch_embed(as_program *p, const as_weight *w, const float *b, const float *cls,
                               const as_patch_spec *spec)
{
    int d = w->rows;
    if (w->cols != spec->channels * spec->patch * spec->patch) {
        mistake(p, "patch_embed: a matrix of %d rows x %d columns for patches of %d channels x %d x %d", w->rows,
                w->cols, spec->channels, spec->patch, spec->patch);
        return 0;
    }
    int h = as_program_add_hook(p, AS_HK_PATCH_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_op *op = as_program_add_op(p, AS_OP_PATCH_EMBED, -1, h, -1, -1,
                                  b ? "patch_embed = [CLS], then W_patch · patch + b" : "patch_embed = [CLS], then W_patch · patch");
    op->w = *w;
    op->b = b;
    op->cls = cls;
    op->patch = *spec;
    op->n_in = w->cols;
    op->n_out = d;
    p->streams[p->hooks[h].stream].patch = *spec;
    return h;
}

int as_program_add_rel_bias(as_program *p, int layer, int n_head, const as_weight *table, const as_rel_spec *rel,
                            const char *text)
{
    int h = as_program_add_hook(p, AS_HK_ATTN_BIAS, layer, AS_CLASS_SCORES, 1, n_head, 0);
    as_op *op = as_program_add_op(p, AS_OP_REL_BIAS, layer, h, -1, -1, text);
    op->w = *table;
    op->rel = *rel;
    op->n_in = table->rows;
    op->n_out = n_head;
    if (table->cols != n_head || table->rows != rel->buckets || rel->buckets < 2 || rel->max_distance < 1) {
        char a[96]; /* a builder's mistake, caught by the tests */
        mistake(p, "rel_bias \"%s\": %s from a table of %d rows x %d columns for %d buckets (max distance %d)", text,
                as_hook_desc(p, h, a, sizeof a), table->rows, table->cols, rel->buckets, rel->max_distance);
    }
    return h;
}

/* As llama.cpp computes it (src/llama-graph.cpp), in the same float and
 * double steps, so that both agree on the bucket at every boundary. */
int as_rel_bucket(const as_rel_spec *r, int q, int k)
{
    int64_t n = r->buckets;
    if (r->bidirectional)
        n >>= 1;
    int64_t exact = n >> 1;
    int rel = k - q, bucket = 0;
    if (r->bidirectional) {
        bucket += (rel > 0) * (int)n;
        rel = abs(rel);
    } else {
        rel = rel < 0 ? -rel : 0;
    }
    if (rel < exact)
        return bucket + rel;
    if (exact <= 0) /* two buckets one way: no logarithmic part */
        return bucket + (int)(n - 1);
    double t = (double)(logf((float)(1.0 * rel / exact)) * (float)(n - exact)) / log(1.0 * r->max_distance / exact);
    int large = (int)floorf((float)((double)exact + t));
    return bucket + (large < n - 1 ? large : (int)(n - 1));
}

int as_program_add_moe(as_program *p, as_hook_kind out_kind, int layer, int in, const as_weight *router,
                       const as_weight *gate, const as_weight *up, const as_weight *down, int n_expert, int k,
                       bool renorm)
{
    as_moe_spec spec = {.n_expert = n_expert, .k = k, .renorm = renorm};
    return as_program_add_moe_spec(p, out_kind, layer, in, router, gate, up, down, &spec);
}

int as_program_add_moe_spec(as_program *p, as_hook_kind out_kind, int layer, int in, const as_weight *router,
                            const as_weight *gate, const as_weight *up, const as_weight *down,
                            const as_moe_spec *spec)
{
    int E = spec->n_expert, k = spec->k, d = p->hooks[in].width, f = E > 0 ? gate->rows / E : 0;
    bool renorm = spec->renorm, grouped = spec->n_group > 1;
    if (E < 1 || E > AS_MAX_EXPERTS || k < 1 || k > E || router->rows != E || router->cols != d ||
        gate->rows != E * f || up->rows != E * f || gate->cols != d || up->cols != d || down->rows != E * d ||
        down->cols != f || (grouped && (E % spec->n_group || E / spec->n_group < 2 || spec->group_used < 1 ||
                     spec->group_used > spec->n_group || k > spec->group_used * (E / spec->n_group)))) {
        char a[96]; /* a builder's mistake, caught by the tests */
        mistake(p, "routed MLP of block %d over %s: %d experts, %d chosen (%d groups, %d used); router %d x %d, "
                   "gate %d x %d, up %d x %d, down %d x %d (rows x columns)", layer, as_hook_desc(p, in, a, sizeof a), E,
                k, spec->n_group, spec->group_used, router->rows, router->cols, gate->rows, gate->cols, up->rows,
                up->cols, down->rows, down->cols);
        return 0;
    }
    int lg = as_program_add_linear(p, AS_HK_ROUTER_LOGITS, layer, AS_CLASS_ESSENTIAL, in, router, NULL, 1, E, 0,
                                   "router logits = ln2 · W_router");
    int w = as_program_add_hook(p, AS_HK_EXPERT_WEIGHTS, layer, AS_CLASS_ESSENTIAL, 1, E, 0);
    as_op *op = spec->sigmoid
                    ? as_program_add_op(p, AS_OP_SIGMOID, layer, w, lg, -1, "expert weights = sigmoid(router logits)")
                    : as_program_add_op(p, AS_OP_ROUTE, layer, w, lg, -1, "expert weights = softmax(router logits)");
    op->n_expert = E, op->k = k, op->n_in = op->n_out = E;
    int ix = as_program_add_hook(p, AS_HK_EXPERT_INDICES, layer, AS_CLASS_ESSENTIAL, 1, k, 0);
    p->hooks[ix].dtype = AS_DT_I32;
    op = as_program_add_op(p, AS_OP_TOPK, layer, ix, w, -1,
                           grouped ? (spec->bias ? "expert indices = top k of weights + bias, in the best groups"
                                                 : "expert indices = top k of the weights, in the best groups")
                                   : (spec->bias ? "expert indices = top k of weights + bias"
                                                 : "expert indices = top k of the weights"));
    op->n_expert = E, op->k = k, op->n_in = E, op->n_out = k, op->b = spec->bias;
    op->n_group = grouped ? spec->n_group : 0, op->group_used = grouped ? spec->group_used : 0;
    int g = as_program_add_hook(p, AS_HK_EXPERT_GATES, layer, AS_CLASS_ESSENTIAL, 1, k, 0);
    bool scaled = spec->scale != 0 && spec->scale != 1;
    op = as_program_add_op(p, AS_OP_GATES, layer, g, w, ix,
                           renorm ? (scaled ? "expert gates = chosen weights / their sum · scale"
                                            : "expert gates = chosen weights / their sum")
                                  : (scaled ? "expert gates = chosen weights · scale" : "expert gates = chosen weights"));
    op->n_expert = E, op->k = k, op->n_in = E, op->n_out = k, op->renorm = renorm;
    op->scale = scaled ? spec->scale : 0;
    static const struct { as_hook_kind kind; const char *text; } lin[] = {
        {AS_HK_EXPERTS_PRE, "experts pre = ln2 · W_gate[expert]"},
        {AS_HK_EXPERTS_PRE_LINEAR, "experts pre_linear = ln2 · W_in[expert]"},
    };
    int pre[2];
    for (int i = 0; i < 2; i++) {
        pre[i] = as_program_add_hook(p, lin[i].kind, layer, AS_CLASS_MLP, 2, k, f);
        op = as_program_add_op(p, AS_OP_EXPERT_LINEAR, layer, pre[i], in, ix, lin[i].text);
        op->w = i ? *up : *gate, op->n_expert = E, op->k = k, op->n_in = d, op->n_out = f;
    }
    int post = as_program_add_hook(p, AS_HK_EXPERTS_POST, layer, AS_CLASS_MLP, 2, k, f);
    as_program_add_op(p, AS_OP_SWIGLU, layer, post, pre[0], pre[1], "experts post = silu(pre) * pre_linear");
    int eo = as_program_add_hook(p, AS_HK_EXPERTS_OUT, layer, AS_CLASS_RESID, 2, k, d);
    op = as_program_add_op(p, AS_OP_EXPERT_LINEAR, layer, eo, post, ix, "experts out = post · W_out[expert]");
    op->w = *down, op->n_expert = E, op->k = k, op->n_in = f, op->n_out = d;
    int out = as_program_add_hook(p, out_kind, layer, AS_CLASS_RESID, 1, d, 0);
    op = as_program_add_op(p, AS_OP_EXPERT_SUM, layer, out, eo, g,
                           out_kind == AS_HK_ROUTED_OUT ? "routed out = Σ gate · experts out"
                                                        : "mlp_out = Σ gate · experts out");
    op->n_expert = E, op->k = k, op->n_in = d, op->n_out = d;
    return out;
}

int as_program_add_shared_mlp(as_program *p, as_hook_kind out_kind, int layer, int in, int routed,
                              const as_weight *gate, const as_weight *up, const as_weight *down)
{
    int d = p->hooks[in].width, f = gate->rows;
    if (up->rows != f || gate->cols != d || up->cols != d || down->rows != d || down->cols != f) {
        char a[96];
        mistake(p, "shared MLP of block %d over %s: gate %d x %d, up %d x %d, down %d x %d (rows x columns)", layer,
                as_hook_desc(p, in, a, sizeof a), gate->rows, gate->cols, up->rows, up->cols, down->rows, down->cols);
        return 0;
    }
    int pre = as_program_add_linear(p, AS_HK_SHARED_PRE, layer, AS_CLASS_MLP, in, gate, NULL, 1, f, 0,
                                    "shared pre = ln2 · W_gate_shexp");
    int lin = as_program_add_linear(p, AS_HK_SHARED_PRE_LINEAR, layer, AS_CLASS_MLP, in, up, NULL, 1, f, 0,
                                    "shared pre_linear = ln2 · W_up_shexp");
    int post = as_program_add_hook(p, AS_HK_SHARED_POST, layer, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_SWIGLU, layer, post, pre, lin, "shared post = silu(pre) * pre_linear");
    int so = as_program_add_linear(p, AS_HK_SHARED_OUT, layer, AS_CLASS_RESID, post, down, NULL, 1, d, 0,
                                   "shared out = post · W_down_shexp");
    return as_program_add_sum(p, out_kind, layer, routed, so, "mlp_out = routed out + shared out");
}

int as_program_add_shared_expert(as_program *p, as_hook_kind out_kind, int layer, int in, int routed,
                                 const as_weight *gate_inp, const as_weight *gate, const as_weight *up,
                                 const as_weight *down)
{
    int d = p->hooks[in].width, f = gate->rows;
    if (gate_inp->rows != 1 || gate_inp->cols != d || up->rows != f || down->rows != d || down->cols != f) {
        char a[96]; /* a builder's mistake, caught by the tests */
        mistake(p, "shared expert of block %d over %s: gate_inp %d x %d, gate %d x %d, up %d x %d, down %d x %d "
                   "(rows x columns)", layer, as_hook_desc(p, in, a, sizeof a), gate_inp->rows, gate_inp->cols,
                gate->rows, gate->cols, up->rows, up->cols, down->rows, down->cols);
        return 0;
    }
    int gl = as_program_add_linear(p, AS_HK_SHARED_GATE_LOGIT, layer, AS_CLASS_ESSENTIAL, in, gate_inp, NULL, 1, 1, 0,
                                   "shared gate logit = ln2 · w_shared_gate");
    int gs = as_program_add_hook(p, AS_HK_SHARED_GATE, layer, AS_CLASS_ESSENTIAL, 1, 1, 0);
    as_program_add_op(p, AS_OP_SIGMOID, layer, gs, gl, -1, "shared gate = sigmoid(gate logit)");
    int pre = as_program_add_linear(p, AS_HK_SHARED_PRE, layer, AS_CLASS_MLP, in, gate, NULL, 1, f, 0,
                                    "shared pre = ln2 · W_gate");
    int lin = as_program_add_linear(p, AS_HK_SHARED_PRE_LINEAR, layer, AS_CLASS_MLP, in, up, NULL, 1, f, 0,
                                    "shared pre_linear = ln2 · W_in");
    int post = as_program_add_hook(p, AS_HK_SHARED_POST, layer, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_SWIGLU, layer, post, pre, lin, "shared post = silu(pre) * pre_linear");
    int so = as_program_add_linear(p, AS_HK_SHARED_OUT, layer, AS_CLASS_RESID, post, down, NULL, 1, d, 0,
                                   "shared out = post · W_out");
    int out = as_program_add_hook(p, out_kind, layer, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_GATED_ADD, layer, out, routed, so, "mlp_out = routed out + shared gate · shared out")
        ->in[2] = gs;
    return out;
}

int as_program_add_unembed(as_program *p, int resid, const float *norm_w, const float *norm_b,
                           as_norm_kind norm, float eps, const as_weight *unembed, const float *unembed_b,
                           float softcap)
{
    int nf = as_program_add_norm(p, AS_HK_LNF_SCALE, -1, resid, norm_w, norm_b, norm, eps, "ln_final");
    p->final_norm = p->n_ops - 1;
    const char *text = softcap > 0 ? (unembed_b ? "logits = cap·tanh((ln_final · W_U + b_U) / cap)"
                                                : "logits = cap·tanh(ln_final · W_U / cap)")
                                   : unembed_b ? "logits = ln_final · W_U + b_U" : "logits = ln_final · W_U";
    int lg = as_program_add_linear(p, AS_HK_LOGITS, -1, AS_CLASS_LOGITS, nf, unembed, unembed_b, 1, unembed->rows, 0,
                                   text);
    p->unembed = p->n_ops - 1;
    p->ops[p->unembed].last_row_only = true;
    p->ops[p->unembed].softcap = softcap;
    return lg;
}

void as_program_free(as_program *p)
{
    if (!p)
        return;
    free(p->hooks);
    free(p->ops);
    free(p->attn);
    free(p);
}

const as_op *as_program_producer(const as_program *p, int hook)
{
    for (int i = 0; i < p->n_ops; i++)
        if (p->ops[i].out == hook)
            return &p->ops[i];
    return NULL;
}

const as_attn *as_program_attn(const as_program *p, int hook)
{
    return hook >= 0 && hook < p->n_hooks && p->hooks[hook].attn >= 0 ? &p->attn[p->hooks[hook].attn] : NULL;
}

int as_program_pick_stream(const as_program *p, as_site_pick pick)
{
    return pick == AS_PICK_SOURCE ? p->source_stream : p->out_stream;
}

int as_program_pattern(const as_program *p, int layer, as_site_pick pick)
{
    int stream = as_program_pick_stream(p, pick);
    as_site site = pick == AS_PICK_CROSS ? AS_SITE_CROSS_ATTN : AS_SITE_SELF_ATTN;
    for (int a = 0; stream >= 0 && a < p->n_attn; a++)
        if (p->attn[a].layer == layer && p->attn[a].q_stream == stream && p->attn[a].site == site)
            return p->attn[a].pattern;
    return -1;
}

bool as_attn_visible(const as_attn *a, int q, int k)
{
    switch (a->mask) {
    case AS_MASK_NONE:
        return true;
    case AS_MASK_WINDOW:
        return k <= q && k > q - a->window;
    default:
        return k <= q;
    }
}

int as_program_find_hook(const as_program *p, const char *name)
{
    for (int i = 0; i < p->n_hooks; i++)
        if (!strcmp(p->hooks[i].name, name))
            return i;
    return -1;
}

int as_program_hook(const as_program *p, as_hook_kind kind, int layer)
{
    for (int i = 0; i < p->n_hooks; i++)
        if (p->hooks[i].kind == kind && p->hooks[i].layer == layer)
            return i;
    return -1;
}

int as_program_hook_in(const as_program *p, as_hook_kind kind, int layer, int stream)
{
    for (int i = 0; i < p->n_hooks; i++)
        if (p->hooks[i].kind == kind && p->hooks[i].layer == layer && p->hooks[i].stream == stream)
            return i;
    return -1;
}

bool as_hook_name_match(const char *pat, const char *name)
{
    /* Iterative glob with backtracking to the last '*': linear enough for hook names. */
    const char *star = NULL, *resume = NULL;
    while (*name) {
        if (*pat == '*') {
            star = pat++;
            resume = name;
        } else if (*pat == *name) {
            pat++;
            name++;
        } else if (star) {
            pat = star + 1;
            name = ++resume;
        } else {
            return false;
        }
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}
