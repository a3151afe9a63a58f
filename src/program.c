#include "attnscope/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TransformerLens names; "%d" is the layer. */
static const char *const hook_format[AS_HK_COUNT] = {
    [AS_HK_EMBED] = "hook_embed",
    [AS_HK_POS_EMBED] = "hook_pos_embed",
    [AS_HK_RESID_PRE] = "blocks.%d.hook_resid_pre",
    [AS_HK_LN1_SCALE] = "blocks.%d.ln1.hook_scale",
    [AS_HK_LN1_NORMALIZED] = "blocks.%d.ln1.hook_normalized",
    [AS_HK_Q] = "blocks.%d.attn.hook_q",
    [AS_HK_K] = "blocks.%d.attn.hook_k",
    [AS_HK_V] = "blocks.%d.attn.hook_v",
    [AS_HK_ROT_Q] = "blocks.%d.attn.hook_rot_q",
    [AS_HK_ROT_K] = "blocks.%d.attn.hook_rot_k",
    [AS_HK_ATTN_SCORES] = "blocks.%d.attn.hook_attn_scores",
    [AS_HK_PATTERN] = "blocks.%d.attn.hook_pattern",
    [AS_HK_Z] = "blocks.%d.attn.hook_z",
    [AS_HK_ATTN_OUT] = "blocks.%d.hook_attn_out",
    [AS_HK_RESID_MID] = "blocks.%d.hook_resid_mid",
    [AS_HK_LN2_SCALE] = "blocks.%d.ln2.hook_scale",
    [AS_HK_LN2_NORMALIZED] = "blocks.%d.ln2.hook_normalized",
    [AS_HK_MLP_PRE] = "blocks.%d.mlp.hook_pre",
    [AS_HK_MLP_PRE_LINEAR] = "blocks.%d.mlp.hook_pre_linear",
    [AS_HK_MLP_POST] = "blocks.%d.mlp.hook_post",
    [AS_HK_MLP_OUT] = "blocks.%d.hook_mlp_out",
    [AS_HK_RESID_POST] = "blocks.%d.hook_resid_post",
    [AS_HK_LNF_SCALE] = "ln_final.hook_scale",
    [AS_HK_LNF_NORMALIZED] = "ln_final.hook_normalized",
    [AS_HK_LOGITS] = "unembed.hook_out",
};

int as_program_add_hook(as_program *p, as_hook_kind kind, int layer, as_hook_class klass,
                        int n_dims, int d0, int d1)
{
    as_hook *h = &p->hooks[p->n_hooks];
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, hook_format[kind], layer);
    h->kind = kind;
    h->layer = layer;
    h->klass = klass;
    h->n_dims = n_dims;
    h->dims[0] = d0;
    h->dims[1] = n_dims > 1 ? d1 : 1;
    h->width = d0 * h->dims[1];
    h->is_attn = kind == AS_HK_ATTN_SCORES || kind == AS_HK_PATTERN;
    return p->n_hooks++;
}

as_op *as_program_add_op(as_program *p, as_op_kind kind, int layer, int out, int in0, int in1,
                         const char *text)
{
    as_op *op = &p->ops[p->n_ops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->layer = layer;
    op->out = out;
    op->in[0] = in0;
    op->in[1] = in1;
    snprintf(op->text, sizeof op->text, "%s", text);
    return op;
}

int as_program_add_norm(as_program *p, as_hook_kind scale_kind, int layer, int in, const float *w,
                        const float *b, bool rms, const char *name)
{
    int d = p->model->cfg.d_model;
    char text[64];
    int s = as_program_add_hook(p, scale_kind, layer, AS_CLASS_ESSENTIAL, 1, 1, 0);
    snprintf(text, sizeof text, rms ? "%s scale = sqrt(mean(x²) + eps)" : "%s scale = sqrt(var + eps)",
             name);
    as_op *op = as_program_add_op(p, AS_OP_NORM_SCALE, layer, s, in, -1, text);
    op->rms = rms;
    int n = as_program_add_hook(p, scale_kind + 1, layer, AS_CLASS_RESID, 1, d, 0);
    snprintf(text, sizeof text, rms ? "%s = x / scale * w" : "%s = (x - mean) / scale * w + b", name);
    op = as_program_add_op(p, AS_OP_NORM_APPLY, layer, n, in, s, text);
    op->w = w, op->b = b, op->rms = rms, op->n_in = op->n_out = d;
    return n;
}

int as_program_add_linear(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in,
                          const float *w, const float *b, int n_in, int n_dims, int d0, int d1,
                          const char *text)
{
    int h = as_program_add_hook(p, kind, layer, klass, n_dims, d0, d1);
    as_op *op = as_program_add_op(p, AS_OP_LINEAR, layer, h, in, -1, text);
    op->w = w, op->b = b, op->n_in = n_in, op->n_out = p->hooks[h].width;
    return h;
}

int as_program_add_attention(as_program *p, int layer, int q, int k, int v, const char *scores_text)
{
    int H = p->model->cfg.n_head, dh = p->model->cfg.d_head;
    p->hooks[k].in_kv_cache = p->hooks[v].in_kv_cache = true; /* read back by later positions */
    int sc = as_program_add_hook(p, AS_HK_ATTN_SCORES, layer, AS_CLASS_SCORES, 1, H, 0);
    as_program_add_op(p, AS_OP_SCORES, layer, sc, q, k, scores_text);
    int pat = as_program_add_hook(p, AS_HK_PATTERN, layer, AS_CLASS_PATTERN, 1, H, 0);
    as_program_add_op(p, AS_OP_SOFTMAX, layer, pat, sc, -1, "pattern = softmax(scores)");
    int z = as_program_add_hook(p, AS_HK_Z, layer, AS_CLASS_HEADS, 2, H, dh);
    as_program_add_op(p, AS_OP_MIX, layer, z, pat, v, "z = pattern · v");
    return z;
}

int as_program_add_sum(as_program *p, as_hook_kind kind, int layer, int a, int b, const char *text)
{
    int h = as_program_add_hook(p, kind, layer, AS_CLASS_RESID, 1, p->model->cfg.d_model, 0);
    as_program_add_op(p, AS_OP_ADD, layer, h, a, b, text);
    return h;
}

int as_program_add_unembed(as_program *p, int resid, bool rms)
{
    const as_model *m = p->model;
    int nf = as_program_add_norm(p, AS_HK_LNF_SCALE, -1, resid, m->out_norm_w, m->out_norm_b, rms,
                                 "ln_final");
    int lg = as_program_add_linear(p, AS_HK_LOGITS, -1, AS_CLASS_LOGITS, nf, m->output, NULL,
                                   m->cfg.d_model, 1, m->cfg.n_vocab, 0, "logits = ln_final · W_U");
    p->ops[p->n_ops - 1].last_row_only = true;
    return lg;
}

int as_program_build(as_program **out, const as_model *m, as_error *err)
{
    *out = NULL;
    as_program *p = calloc(1, sizeof *p);
    /* A block has at most 24 hooks and ops; the ends fewer than 8. */
    size_t cap = 8 + 24 * (size_t)m->cfg.n_layer;
    if (p) {
        p->hooks = calloc(cap, sizeof *p->hooks);
        p->ops = calloc(cap, sizeof *p->ops);
    }
    if (!p || !p->hooks || !p->ops) {
        as_program_free(p);
        return as_error_set(err, "out of memory building the program");
    }
    p->model = m;
    int rc = m->cfg.arch == AS_ARCH_GPT2 ? as_arch_gpt2_build(p, err) : as_arch_llama_build(p, err);
    if (rc) {
        as_program_free(p);
        return AS_ERR;
    }
    *out = p;
    return AS_OK;
}

void as_program_free(as_program *p)
{
    if (!p)
        return;
    free(p->hooks);
    free(p->ops);
    free(p);
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
