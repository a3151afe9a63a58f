/* session_view: the accessors a front reads a session through
 * (include/attnscope/view_api.h). Each reads one fact; none computes. */
#include "attnscope/view_api.h"
#include "session_internal.h"

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

const as_capture *as_view_capture(const as_session *s) { return s->cap; }
int as_view_filled(const as_session *s, int hook) { return s->cap->filled[hook]; }
size_t as_view_keep_mb(const as_session *s) { return s->cap->keep_mb; }
size_t as_view_capture_used(const as_session *s) { return s->cap->used; }
bool as_view_dropped_some(const as_session *s) { return s->cap->dropped_from >= 0; }
const char *as_view_dropped_note(const as_session *s) { return s->cap->dropped; }

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
