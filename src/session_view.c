/* session_view: the accessors a front reads a session through
 * (include/attnscope/view_api.h). Each reads one fact; what is computed
 * (a position row, rotary angles, a bucket) is the kernels' own function,
 * never a second copy of the arithmetic. */
#include "attnscope/view_api.h"
#include "session_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

FILE *as_view_out(const as_session *s) { return s->out; }
FILE *as_view_warn(const as_session *s) { return s->warn; }

void as_view_set_out(as_session *s, FILE *out) { s->out = out; }
void as_view_set_warn(as_session *s, FILE *warn) { s->warn = warn; }

bool as_view_quit(const as_session *s) { return s->quit; }

void as_view_on_pass(as_session *s, as_pass_fn fn, void *ctx)
{
    s->on_pass = fn;
    s->on_pass_ctx = ctx;
}

void as_view_set_interrupt(as_session *s, volatile sig_atomic_t *flag)
{
    s->interrupt = flag;
    s->it->interrupt = flag;
}

int as_view_set_ctx(as_session *s, int n, as_error *err)
{
    if (n && as_interp_set_ctx(s->it, n, err))
        return AS_ERR;
    s->ctx = n;
    return AS_OK;
}

float as_view_temp(const as_session *s) { return s->sampler.temp; }

const as_model *as_view_model(const as_session *s) { return s->model; }
const char *as_view_model_name(const as_session *s) { return s->model->cfg.name; }
int as_view_n_layer(const as_session *s) { return s->model->cfg.n_layer; }
int as_view_n_head(const as_session *s) { return s->model->cfg.n_head; }
int as_view_n_vocab(const as_session *s) { return s->model->cfg.n_vocab; }
int as_view_d_model(const as_session *s) { return s->model->cfg.d_model; }
int as_view_model_ctx(const as_session *s) { return s->model->cfg.n_ctx; }
const char *as_view_model_warnings(const as_session *s) { return s->model->warnings; }
const as_tokenizer *as_view_tokenizer(const as_session *s) { return s->model->tok; }

const as_program *as_view_program(const as_session *s) { return s->prog; }
int as_view_out_stream(const as_session *s) { return s->prog->out_stream; }
int as_view_source_stream(const as_session *s) { return s->prog->source_stream; }
bool as_view_pixels(const as_session *s) { return s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS; }
bool as_view_causal(const as_session *s) { return s->prog->streams[s->prog->out_stream].causal; }
int as_view_logits_pos(const as_session *s) { return s->prog->logits_pos; }
as_hook_kind as_view_lens_kind(const as_session *s) { return s->prog->lens_kind; }
bool as_view_no_lens(const as_session *s) { return s->prog->no_lens; }
int as_view_n_hooks(const as_session *s) { return s->prog->n_hooks; }
const char *as_view_hook_name(const as_session *s, int hook) { return s->prog->hooks[hook].name; }
int as_view_n_ops(const as_session *s) { return s->prog->n_ops; }
const as_patch_spec *as_view_patch(const as_session *s, int stream) { return &s->prog->streams[stream].patch; }
const as_image_spec *as_view_image(const as_session *s, int stream) { return &s->prog->streams[stream].image; }

int as_view_site_heads(const as_attn *a) { return a->n_head; }
int as_view_site_q_stream(const as_attn *a) { return a->q_stream; }
int as_view_site_kv_stream(const as_attn *a) { return a->kv_stream; }
int as_view_site_key_hook(const as_attn *a) { return a->k; }
bool as_view_site_masks(const as_attn *a) { return a->mask != AS_MASK_NONE; }
void as_view_site_math(const as_attn *a, as_site_math *out)
{
    *out = (as_site_math){a->q, a->k, a->v, a->scores, a->pattern, a->z, a->bias, a->n_head, a->n_head_kv, a->d_qk,
                          a->d_v, a->scale, a->softcap, a->mask != AS_MASK_NONE, a->mask == AS_MASK_WINDOW ? a->window : 0};
}

int as_view_op_layer(const as_op *op) { return op->layer; }
const char *as_view_op_text(const as_op *op) { return op->text; }
bool as_view_op_rms(const as_op *op) { return op->norm == AS_NORM_RMS; }
int as_view_op_experts(const as_op *op) { return op->n_expert; }
int as_view_op_k(const as_op *op) { return op->k; }

const as_interp *as_view_interp(const as_session *s) { return s->it; }
int as_view_n_tokens(const as_session *s) { return s->it->out->n_tokens; }
int as_view_n_prompt(const as_session *s) { return s->it->out->n_prompt; }
int as_view_n_done(const as_session *s) { return s->it->out->n_done; }
int32_t as_view_token(const as_session *s, int pos) { return s->it->out->tokens[pos]; }
int32_t as_view_token_type(const as_session *s, int pos) { return s->it->out->types ? s->it->out->types[pos] : 0; }
int as_view_stream_tokens(const as_session *s, int stream) { return s->it->st[stream].n_tokens; }
const float *as_view_stream_pixels(const as_session *s, int stream) { return s->it->st[stream].pixels; }
int as_view_n_ctx(const as_session *s) { return s->it->n_ctx; }
bool as_view_in_pass(const as_session *s) { return s->it->in_pass; }
int as_view_pc(const as_session *s) { return s->it->pc; }
unsigned long as_view_gen(const as_session *s) { return s->it->gen; }

bool as_view_saliency(const as_session *s, int pos, float *share)
{
    if (!s->saliency || s->saliency_gen != s->it->gen || s->saliency_n != s->it->out->n_tokens || pos < 0 ||
        pos >= s->saliency_n)
        return false;
    float mx = 0;
    for (int i = 0; i < s->saliency_n; i++)
        mx = fabsf(s->saliency[i]) > mx ? fabsf(s->saliency[i]) : mx;
    *share = mx > 0 ? s->saliency[pos] / mx : 0.0f;
    return true;
}

int as_view_norm_input(const as_session *s, int scale_hook)
{
    const as_op *op = scale_hook >= 0 ? as_program_producer(s->prog, scale_hook) : NULL;
    return op && (op->kind == AS_OP_NORM_SCALE || op->kind == AS_OP_NORM_APPLY) ? op->in[0] : -1;
}

int as_view_grad_page(as_session *s, int hook, as_grad_page *out, as_error *err)
{
    const as_interp *it = s->it;
    memset(out, 0, sizeof *out);
    if (hook < 0 || hook >= s->prog->n_hooks || s->prog->hooks[hook].is_attn)
        return as_error_set(err, "no gradient page for this hook");
    if (!s->has_metric)
        return as_error_set(err, "no metric: set one (:metric logprob TOKEN, or :metric TOKEN_A TOKEN_B)");
    bool done = !it->in_pass && !as_interp_stale(it) && it->out->n_tokens > 0;
    for (int st = 0; st < s->prog->n_streams; st++)
        done = done && it->st[st].n_done == it->st[st].n_tokens;
    if (!done)
        return as_error_set(err, "the pass is not finished: f finishes it, then the gradient is computed");
    struct as_grad_cache *g = &s->gpage;
    bool fresh = g->valid && g->hook == hook && g->gen == it->gen && g->kind == s->metric_kind &&
                 g->pos == s->metric_pos && g->tok[0] == s->metric[0] && g->tok[1] == s->metric[1];
    if (!fresh) {
        float *grad = NULL, *act = NULL;
        int n = 0;
        double value = 0;
        g->valid = false;
        int rc = as_cmd_grad_hooks(s, &hook, 1, &grad, &act, &n, &value, err);
        int w = s->prog->hooks[hook].width;
        float *norm = rc ? NULL : malloc((size_t)(n ? n : 1) * sizeof *norm);
        float *dot = rc ? NULL : malloc((size_t)(n ? n : 1) * sizeof *dot);
        if (!rc && (!norm || !dot))
            rc = as_error_set(err, "out of memory");
        for (int i = 0; rc == AS_OK && i < n; i++) {
            double ss = 0, d = 0;
            for (int k = 0; k < w; k++) {
                double v = grad[(size_t)i * w + k];
                ss += v * v, d += v * act[(size_t)i * w + k];
            }
            norm[i] = (float)sqrt(ss), dot[i] = (float)d;
        }
        free(grad), free(act);
        if (rc) {
            free(norm), free(dot);
            return AS_ERR;
        }
        free(g->norm), free(g->dot);
        g->norm = norm, g->dot = dot, g->n = n, g->value = value, g->hook = hook, g->gen = it->gen;
        g->kind = s->metric_kind, g->pos = s->metric_pos, g->tok[0] = s->metric[0], g->tok[1] = s->metric[1];
        g->valid = true;
    }
    out->n = g->n, out->norm = g->norm, out->dot = g->dot, out->value = g->value;
    as_cmd_metric_describe(s, out->metric, sizeof out->metric);
    return AS_OK;
}

const as_capture *as_view_capture(const as_session *s) { return s->cap; }
int as_view_filled(const as_session *s, int hook) { return s->cap->filled[hook]; }
size_t as_view_keep_mb(const as_session *s) { return s->cap->keep_mb; }
size_t as_view_capture_used(const as_session *s) { return s->cap->used; }
bool as_view_dropped_some(const as_session *s) { return s->cap->dropped_from >= 0; }
const char *as_view_dropped_note(const as_session *s) { return s->cap->dropped; }
const char *as_view_saved_run(const as_session *s) { return s->saved_run; }
const char *as_view_model_path(const as_session *s) { return s->model->path ? s->model->path : ""; }

/* ---- view mla (issue #33): a site's KV cache ---- */
void as_view_site_cache(const as_session *s, const as_attn *a, as_site_cache *out)
{
    const as_program *p = s->prog;
    int l = a->layer;
    *out = (as_site_cache){.layer = l, .latent_hook = as_program_hook(p, AS_HK_KV_A_NORM_NORMALIZED, l),
                           .rope_hook = as_program_hook(p, AS_HK_K_PE, l), .kv_hook = as_program_hook(p, AS_HK_KV, l),
                           .k_nope_hook = as_program_hook(p, AS_HK_K_NOPE, l), .n_head = a->n_head};
    out->held = p->hooks[a->k].width + p->hooks[a->v].width;
    if (out->latent_hook >= 0 && out->rope_hook >= 0) {
        out->latent = p->hooks[out->latent_hook].width;
        out->rope = p->hooks[out->rope_hook].width;
    }
    /* the heads' own widths: MLA's hook_z is [heads, d_v] in either layout (the absorbed site's own z is
     * the latent's); a plain cache's from the site's word */
    int z = out->latent > 0 ? as_program_hook(p, AS_HK_Z, l) : -1;
    out->d_v = z >= 0 && a->n_head > 0 ? p->hooks[z].width / a->n_head : a->d_v;
    out->plain = a->plain_kv > 0 ? a->plain_kv : a->n_head * (a->d_qk + a->d_v);
    out->d_k = a->n_head > 0 ? out->plain / a->n_head - out->d_v : a->d_qk;
    int H = a->n_head;
    out->gqa_kv = H >= 8 && H % 4 == 0 ? H / 4 : H >= 4 && H % 2 == 0 ? H / 2 : 0;
    out->absorbed = out->latent > 0 && a->n_head_kv == 1 && a->d_v == out->latent;
}

/* ---- view positions ---- */

bool as_view_pos_facts(const as_session *s, const as_op *op, as_pos_facts *out)
{
    *out = (as_pos_facts){.kind = AS_POSK_NONE};
    switch (op->kind) {
    case AS_OP_POS_EMBED:
        out->kind = AS_POSK_LEARNED;
        out->rows = op->w.rows;
        out->dims = op->w.cols;
        return true;
    case AS_OP_SIN_POS:
        out->kind = AS_POSK_SINUSOID;
        out->dims = op->n_out;
        out->base = op->scale;
        return true;
    case AS_OP_ROPE: {
        const as_rope_spec *r = &op->rope;
        out->kind = AS_POSK_ROTARY;
        out->base = r->base;
        out->rot_dim = r->dim;
        out->offset = r->offset;
        out->halves = r->mode == AS_ROPE_HALVES;
        out->freq_scale = r->freq_scale;
        out->ext_factor = r->ext_factor;
        out->attn_factor = r->attn_factor;
        out->n_ctx_orig = r->n_ctx_orig;
        out->n_heads = s->prog->hooks[op->out].dims[0];
        out->d_head = s->prog->hooks[op->out].dims[1];
        out->freqs = r->freqs != NULL;
        return true;
    }
    case AS_OP_REL_BIAS:
        out->kind = AS_POSK_RELATIVE;
        out->rows = op->rel.buckets;
        out->dims = op->n_out;
        out->max_distance = op->rel.max_distance;
        out->bidirectional = op->rel.bidirectional;
        return true;
    default:
        return false;
    }
}

void as_view_pos_row(const as_op *op, int pos, float *out)
{
    if (op->kind == AS_OP_POS_EMBED) {
        as_weight_row(&op->w, pos, out);
    } else if (op->kind == AS_OP_SIN_POS) {
        as_sinusoid_row(pos, op->n_out, op->scale, out);
    }
}

void as_view_rope_theta(const as_op *op, int pos, double *theta) { as_rope_theta(&op->rope, pos, theta); }
int as_view_rel_bucket(const as_op *op, int q, int k) { return as_rel_bucket(&op->rel, q, k); }
void as_view_rel_row(const as_op *op, int bucket, float *out) { as_weight_row(&op->w, bucket, out); }
/* view mlp */
as_act_kind as_view_op_act(const as_op *op, bool *gated)
{
    *gated = op->kind == AS_OP_SWIGLU || op->kind == AS_OP_GEGLU;
    switch (op->kind) {
    case AS_OP_GELU: return op->gelu == AS_GELU_ERF ? AS_ACT_GELU_ERF : AS_ACT_GELU_TANH;
    case AS_OP_GEGLU: return AS_ACT_GELU_TANH; /* as_geglu: the tanh form, whatever op->gelu says */
    case AS_OP_RELU: return AS_ACT_RELU;
    case AS_OP_SWIGLU: return AS_ACT_SILU;
    default: return AS_ACT_NONE;
    }
}
/* view residual */
const as_op *as_view_op(const as_session *s, int i) { return &s->prog->ops[i]; }
as_op_role as_view_op_role(const as_op *op)
{
    switch (op->kind) {
    case AS_OP_ADD: return AS_ROLE_ADD;
    case AS_OP_COPY: return AS_ROLE_COPY;
    case AS_OP_NORM_APPLY: return AS_ROLE_NORM;
    case AS_OP_NORM_SCALE: return AS_ROLE_NORM_SCALE;
    case AS_OP_SCORES: return AS_ROLE_SCORES;
    default: return AS_ROLE_OTHER;
    }
}
int as_view_op_in(const as_op *op, int j) { return j >= 0 && j < 3 ? op->in[j] : -1; }
int as_view_op_out(const as_op *op) { return op->out; }
int as_view_hook_stream(const as_session *s, int hook) { return s->prog->hooks[hook].stream; }
int as_view_hook_layer(const as_session *s, int hook) { return s->prog->hooks[hook].layer; }
int as_view_hook_width(const as_session *s, int hook) { return s->prog->hooks[hook].width; }
