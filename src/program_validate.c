/* program_validate: as_program_build (the architecture's build, then
 * the checks) and the checks of a built program (as_program_validate,
 * src/program_build.h): each op reads hooks already filled, each hook has
 * one producer, and the widths an op reads match what it fills. */
#include "program_build.h"

#include <stdio.h>
#include <stdlib.h>

/* What each op kind computes, in a word, for messages. */
static const char *const op_name[] = {
    [AS_OP_EMBED] = "embed", [AS_OP_POS_EMBED] = "pos_embed", [AS_OP_ADD] = "add", [AS_OP_COPY] = "copy",
    [AS_OP_NORM_SCALE] = "norm_scale", [AS_OP_NORM_APPLY] = "norm_apply", [AS_OP_LINEAR] = "linear",
    [AS_OP_ROPE] = "rope", [AS_OP_SCORES] = "scores", [AS_OP_SOFTMAX] = "softmax", [AS_OP_MIX] = "mix",
    [AS_OP_GELU] = "gelu", [AS_OP_SWIGLU] = "swiglu", [AS_OP_GEGLU] = "geglu", [AS_OP_TYPE_EMBED] = "type_embed",
    [AS_OP_POOL] = "pool", [AS_OP_RELU] = "relu", [AS_OP_SIN_POS] = "sin_pos", [AS_OP_PATCH_EMBED] = "patch_embed",
    [AS_OP_REL_BIAS] = "rel_bias", [AS_OP_ROUTE] = "route", [AS_OP_TOPK] = "topk", [AS_OP_GATES] = "gates",
    [AS_OP_EXPERT_LINEAR] = "expert_linear", [AS_OP_EXPERT_SUM] = "expert_sum", [AS_OP_SIGMOID] = "sigmoid",
    [AS_OP_GATED_ADD] = "gated_add", [AS_OP_SLICE] = "slice", [AS_OP_CONCAT] = "concat",
    [AS_OP_HEAD_LINEAR] = "head_linear", [AS_OP_HEAD_OUT] = "head_out", [AS_OP_HEAD_SUM] = "head_sum",
};

const char *as_op_kind_name(as_op_kind k)
{
    return (unsigned)k < sizeof op_name / sizeof op_name[0] && op_name[k] ? op_name[k] : "?";
}

/* An op, for messages: 'op 12 (linear "q = ln1 · W_Q")'. */
static const char *op_desc(const as_program *p, int i, char *buf, size_t cap)
{
    const as_op *op = &p->ops[i];
    const char *name = as_op_kind_name(op->kind);
    snprintf(buf, cap, "op %d (%s \"%s\")", i, name, op->text);
    return buf;
}

/* Whether hook `h` has `want` values per position; if not, the error names the op and both shapes. */
static int check_width(const as_program *p, int i, int h, int want, const char *what, as_error *err)
{
    if (h < 0 || p->hooks[h].width == want)
        return AS_OK;
    char o[160], a[96];
    return as_error_set(err, "%s: %s has %d values a position where %s takes %d", op_desc(p, i, o, sizeof o),
                        as_hook_desc(p, h, a, sizeof a), p->hooks[h].width, what, want);
}

int as_program_validate(const as_program *p, as_error *err)
{
    int *producer = malloc((size_t)(p->n_hooks > 0 ? p->n_hooks : 1) * sizeof *producer);
    if (!producer)
        return as_error_set(err, "out of memory validating the program");
    for (int h = 0; h < p->n_hooks; h++)
        producer[h] = -1;
    int rc = AS_OK;
    char o[160], a[96], b[160];
    for (int i = 0; i < p->n_ops && rc == AS_OK; i++) {
        const as_op *op = &p->ops[i];
        if (op->out < 0 || op->out >= p->n_hooks) {
            rc = as_error_set(err, "%s: fills hook %d, which the program does not have", op_desc(p, i, o, sizeof o),
                              op->out);
            break;
        }
        /* inputs before outputs: every hook read is one an earlier op filled */
        const as_attn *site = op->attn >= 0 && op->attn < p->n_attn ? &p->attn[op->attn] : NULL;
        int reads[4] = {op->in[0], op->in[1], op->in[2], op->kind == AS_OP_SCORES && site ? site->bias : -1};
        for (int j = 0; j < 4 && rc == AS_OK; j++) {
            int h = reads[j];
            if (h < 0)
                continue;
            if (h >= p->n_hooks)
                rc = as_error_set(err, "%s: reads hook %d, which the program does not have", op_desc(p, i, o, sizeof o), h);
            else if (producer[h] < 0)
                rc = as_error_set(err, "%s: reads %s before any op fills it", op_desc(p, i, o, sizeof o),
                                  as_hook_desc(p, h, a, sizeof a));
        }
        if (rc)
            break;
        /* one producer per hook */
        if (producer[op->out] >= 0) {
            rc = as_error_set(err, "%s: fills %s, which %s fills already", op_desc(p, i, o, sizeof o),
                              as_hook_desc(p, op->out, a, sizeof a), op_desc(p, producer[op->out], b, sizeof b));
            break;
        }
        producer[op->out] = i;
        if ((op->kind == AS_OP_SCORES || op->kind == AS_OP_SOFTMAX || op->kind == AS_OP_MIX) && !site) {
            rc = as_error_set(err, "%s: an attention op without its attention site", op_desc(p, i, o, sizeof o));
            break;
        }
        /* widths match: what each kind reads against what it fills */
        int w = p->hooks[op->out].width;
        switch (op->kind) {
        case AS_OP_ADD: case AS_OP_COPY: case AS_OP_GELU: case AS_OP_RELU: case AS_OP_SIGMOID:
        case AS_OP_SWIGLU: case AS_OP_GEGLU: case AS_OP_ROPE: case AS_OP_GATED_ADD:
            rc = check_width(p, i, op->in[0], w, "its output", err) ||
                 check_width(p, i, op->in[1], w, "its output", err) ||
                 (op->kind == AS_OP_ADD && check_width(p, i, op->in[2], w, "its output", err)) ||
                 (op->kind == AS_OP_GATED_ADD && check_width(p, i, op->in[2], 1, "the gate", err));
            break;
        case AS_OP_LINEAR:
            rc = check_width(p, i, op->in[0], op->w.cols, "its matrix's columns", err) ||
                 check_width(p, i, op->out, op->w.rows, "its matrix's rows", err);
            break;
        case AS_OP_HEAD_OUT:
            rc = check_width(p, i, op->in[0], op->w.cols, "its matrix's columns", err) ||
                 check_width(p, i, op->out, op->w.rows * p->hooks[op->in[0]].dims[0], "its matrix's rows a head", err);
            break;
        case AS_OP_HEAD_SUM:
            rc = check_width(p, i, op->in[0], w * p->hooks[op->in[0]].dims[0], "its output a head", err);
            break;
        case AS_OP_NORM_SCALE:
            rc = check_width(p, i, op->in[0], w * op->n_in, "the groups it normalizes", err);
            break;
        case AS_OP_NORM_APPLY:
            rc = check_width(p, i, op->in[0], w, "its output", err) ||
                 (op->n_in > 0 && check_width(p, i, op->in[1], w / op->n_in, "one scale a group", err));
            break;
        case AS_OP_SCORES:
            rc = check_width(p, i, op->in[0], site->n_head * site->d_qk, "the site's query heads", err) ||
                 check_width(p, i, op->in[1], site->n_head_kv * site->d_qk, "the site's key heads", err) ||
                 check_width(p, i, op->out, site->n_head, "one row a head", err);
            break;
        case AS_OP_SOFTMAX:
            rc = check_width(p, i, op->in[0], w, "its output", err) ||
                 check_width(p, i, op->out, site->n_head, "one row a head", err);
            break;
        case AS_OP_MIX:
            rc = check_width(p, i, op->in[0], site->n_head, "one row a head", err) ||
                 check_width(p, i, op->in[1], site->n_head_kv * site->d_v, "the site's value heads", err) ||
                 check_width(p, i, op->out, site->n_head * site->d_v, "the site's heads of values", err);
            break;
        default: /* embeddings, pooling, routing, slices: their builders check their shapes */
            break;
        }
    }
    for (int h = 0; h < p->n_hooks && rc == AS_OK; h++)
        if (producer[h] < 0)
            rc = as_error_set(err, "%s: no op fills it", as_hook_desc(p, h, a, sizeof a));
    free(producer);
    return rc ? AS_ERR : AS_OK;
}

/* Builds the architecture's program and validates it: the last step of
 * a build, here so that the builder (program.c) does not call the checks
 * that read it. */
int as_program_build(as_program **out, const as_model *m, as_error *err)
{
    return as_program_build_opts(out, m, 0, err);
}

int as_program_build_opts(as_program **out, const as_model *m, unsigned opts, as_error *err)
{
    *out = NULL;
    as_program *p = calloc(1, sizeof *p);
    if (!p)
        return as_error_set(err, "out of memory building the program");
    p->model = m;
    p->opts = opts;
    p->unembed = p->final_norm = p->pooled = p->head_first = p->source_stream = p->start_token = p->logits_pos = -1;
    p->lens_kind = AS_HK_RESID_POST;
    /* A block of today's architectures has at most 32 hooks and ops, the
     * ends fewer than 8: room for them up front, growth past it. */
    p->cap_hooks = p->cap_ops = 8 + 32 * m->cfg.n_layer;
    p->cap_attn = m->cfg.n_layer;
    p->hooks = malloc((size_t)p->cap_hooks * sizeof *p->hooks);
    p->ops = malloc((size_t)p->cap_ops * sizeof *p->ops);
    p->attn = malloc((size_t)p->cap_attn * sizeof *p->attn);
    if (!p->hooks || !p->ops || !p->attn) {
        as_program_free(p);
        return as_error_set(err, "out of memory building the program");
    }
    if (m->arch->build(p, err)) {
        as_program_free(p);
        return AS_ERR;
    }
    if (p->failed || p->n_streams == 0 || p->n_ops == 0) {
        as_error_set(err, "%s: the %s program could not be built (%s)", m->path, m->arch->gguf_name,
                     p->failed ? (p->mistake[0] ? p->mistake : "out of memory") : "no stream or no output");
        as_program_free(p);
        return AS_ERR;
    }
    if (as_program_validate(p, err)) {
        as_error_prefix(err, "%s: the %s program is not valid", m->path, m->arch->gguf_name);
        as_program_free(p);
        return AS_ERR;
    }
    /* An encoder without head or pooling outputs its last hidden states. */
    p->out_stream = p->hooks[p->unembed >= 0 ? p->ops[p->unembed].out : p->ops[p->n_ops - 1].out].stream;
    *out = p;
    return AS_OK;
}
