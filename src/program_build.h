/* program_build: the program builder, for architecture files (arch_*.c)
 * and program.c only: streams, scopes, hooks and ops added one after
 * another (see src/attnscope/program.h for what they are). Private to
 * the engine: the session, the interpreter and the instruments read a
 * built program through attnscope/program.h, the view through view_api.h
 * and engine.h. */
#ifndef ATTNSCOPE_PROGRAM_BUILD_H
#define ATTNSCOPE_PROGRAM_BUILD_H

#include "attnscope/program.h"

/* Checks a built program (as_program_build does, after the architecture's
 * build): every op reads only hooks an earlier op filled (inputs before
 * outputs), every hook is filled by exactly one op, and the widths an op reads match
 * what it fills (elementwise ops, linear maps against their matrix, norms,
 * an attention site's three ops against its heads). The error names the
 * op and the shapes. */
int as_program_validate(const as_program *p, as_error *err);
/* A hook's name and shape per position, for messages: "blocks.0.attn.hook_q [4, 16]". */
const char *as_hook_desc(const as_program *p, int hook, char *buf, size_t cap);

/* Opens a stream; returns its index. */
int as_program_add_stream(as_program *p, const char *name, as_input input, int n_ctx, bool causal);
/* Sets the scope of the hooks that follow: block `layer` ("blocks.%d"),
 * or the top level with layer -1. */
void as_program_scope(as_program *p, int layer);
/* The same for a named part outside the blocks ("embed": its hooks are
 * embed.hook_embed, ...); NULL or "" for the top level. */
void as_program_scope_name(as_program *p, const char *name);
/* Gives a hook another name (TransformerLens's, where the kind's usual
 * suffix is not it: BERT's final norm is mlm_head.ln). */
void as_program_rename(as_program *p, int hook, const char *name);
int as_program_add_hook(as_program *p, as_hook_kind kind, int layer, as_hook_class klass,
                        int n_dims, int d0, int d1);
as_op *as_program_add_op(as_program *p, as_op_kind kind, int layer, int out, int in0, int in1,
                         const char *text);
/* A norm as two ops (scale, then normalized output); returns the output
 * hook. scale_kind's successor in the enum is the normalized kind. */
int as_program_add_norm(as_program *p, as_hook_kind scale_kind, int layer, int in, const float *w,
                        const float *b, as_norm_kind norm, float eps, const char *name);
/* A hook filled by in · Wᵀ + b, shaped [d0] or [d0, d1] per position
 * (d0 * d1 == w->rows). */
int as_program_add_linear(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in,
                          const as_weight *w, const float *b, int n_dims, int d0, int d1, const char *text);
/* A norm over each head of a [heads, d_head] hook (q and k norms); its
 * scale hook is [heads, 1] per position. Returns the output hook. */
int as_program_add_head_norm(as_program *p, as_hook_kind scale_kind, int layer, int in, const float *w,
                             as_norm_kind norm, float eps, const char *name);
/* Rotary positions on a [heads, d_head] hook; returns the rotated hook. */
int as_program_add_rope(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in,
                        const as_rope_spec *rope, const char *text);
/* An attention site from q, k, v hooks (the fields from q to softcap of
 * *site; the rest are filled): scores, pattern, z; returns z. */
int as_program_add_attention(as_program *p, const as_attn *site, const char *scores_text);
/* A residual-stream sum a + b (+ c when c >= 0) filling a hook of `kind`. */
int as_program_add_sum3(as_program *p, as_hook_kind kind, int layer, int a, int b, int c, const char *text);
/* A residual-stream sum a + b filling a hook of `kind`. */
int as_program_add_sum(as_program *p, as_hook_kind kind, int layer, int a, int b, const char *text);
/* The pooled vector of a non-causal stream's hook `in` (every row of
 * the pooler.hook_out holds it); returns that hook. */
int as_program_add_pool(as_program *p, int in, as_pooling how);
/* The same, the pooled vector divided by its L2 norm when l2 (at least 1e-12,
 * as torch.nn.functional.normalize). */
int as_program_add_pool_l2(as_program *p, int in, as_pooling how, bool l2);
/* The patch embedding of a pixel stream: [CLS] (cls, d values) at
 * position 0, then W · patch + b for each patch (W: d rows of
 * channels * patch * patch); returns its hook (embed.hook_patch_embed
 * under the scope "embed"). */
int as_program_add_patch_embed(as_program *p, const as_weight *w, const float *b, const float *cls,
                               const as_patch_spec *spec);
/* A relative position bias for the attention site added next (its `bias`
 * fact): [head, n_q, n_k] like its scores, each entry the row of `table`
 * ([buckets][heads]) of the key's bucket relative to the query. Its
 * stream is the current one (the queries'). Returns its hook. */
int as_program_add_rel_bias(as_program *p, int layer, int n_head, const as_weight *table, const as_rel_spec *rel,
                            const char *text);
/* A routed MLP (mixture of experts) over `in` (the normalized residual
 * stream): router logits = in · routerᵀ, weights = softmax, the top k
 * experts, their gates (renormalised to sum 1 when renorm), then each
 * chosen expert's SwiGLU MLP (gate, up: n_expert stacked matrices of
 * d_expert rows; down: of d_model rows) in slot layout, and the gated sum
 * as a hook of `out_kind` (hook_mlp_out). Hooks take the MLP's scope
 * (blocks.L.mlp.hook_router_logits, blocks.L.mlp.experts.hook_pre).
 * Returns the sum's hook. */
int as_program_add_moe(as_program *p, as_hook_kind out_kind, int layer, int in, const as_weight *router,
                       const as_weight *gate, const as_weight *up, const as_weight *down, int n_expert, int k,
                       bool renorm);
/* How a routed MLP chooses and weighs its experts, beyond Mixtral's
 * (softmax, top k, renorm): sigmoid weights instead of softmax; a bias
 * per expert added to the weights for choosing only (DeepSeek-V3's
 * exp_probs_b); group-limited choice (n_group > 1 groups of consecutive
 * experts, only the group_used of largest score, the sum of a group's two
 * largest biased weights, chosen from); the gates times scale (0 or 1:
 * none). */
typedef struct as_moe_spec {
    int n_expert, k;
    bool renorm, sigmoid;
    const float *bias;
    int n_group, group_used;
    float scale;
} as_moe_spec;
/* as_program_add_moe with those choices. */
int as_program_add_moe_spec(as_program *p, as_hook_kind out_kind, int layer, int in, const as_weight *router,
                            const as_weight *gate, const as_weight *up, const as_weight *down,
                            const as_moe_spec *spec);
/* Shared experts without a gate (DeepSeek): a SwiGLU MLP over `in`
 * (hooks blocks.L.mlp.shared.*) whose output is added to `routed` (of
 * kind AS_HK_ROUTED_OUT), giving a hook of `out_kind`. Returns it. */
int as_program_add_shared_mlp(as_program *p, as_hook_kind out_kind, int layer, int in, int routed,
                              const as_weight *gate, const as_weight *up, const as_weight *down);
/* A shared expert beside a routed MLP (Qwen-MoE): a SwiGLU MLP over
 * `in` (gate, up: d_shared rows; down: d_model rows) whose output is
 * multiplied by sigmoid(in · gate_inp) (gate_inp: one row) and added to
 * `routed` (as_program_add_moe's sum, of kind AS_HK_ROUTED_OUT), giving a
 * hook of `out_kind`; hooks blocks.L.mlp.shared.*. Returns that hook. */
int as_program_add_shared_expert(as_program *p, as_hook_kind out_kind, int layer, int in, int routed,
                                 const as_weight *gate_inp, const as_weight *gate, const as_weight *up,
                                 const as_weight *down);
/* A hook of kind `kind` [groups, width] holding columns [col0, col0 +
 * width) of each of `in`'s groups (in's dims[0] of them, or one when it
 * is 1-D). Returns it. */
int as_program_add_slice(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in, int groups,
                         int col0, int width, const char *text);
/* A hook of kind `kind` [groups of a, groups of b]: each group of a
 * followed by b's group (b's one group repeated when b has one). */
int as_program_add_concat(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int a, int b,
                          const char *text);
/* A hook of kind `kind` [groups, n_out]: group h is matrix h of w (w
 * stacks one matrix of n_out rows per group) times w->cols values of
 * in's group h from column col0. Returns it. */
int as_program_add_head_linear(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in, int groups,
                               const as_weight *w, int n_out, int col0, const char *text);
/* Gives a hook another kind, and the name that kind has in its scope
 * (the mix of an attention site whose z is not hook_z). */
void as_program_set_kind(as_program *p, int hook, as_hook_kind kind);
/* The final norm and the unembedding (with its bias, or NULL, and its
 * soft-cap, or 0); returns the logits hook. */
int as_program_add_unembed(as_program *p, int resid, const float *norm_w, const float *norm_b,
                           as_norm_kind norm, float eps, const as_weight *unembed, const float *unembed_b,
                           float softcap);

#endif
