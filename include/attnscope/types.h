/* types: the values a front and the engine exchange, and the engine's
 * objects as opaque handles. A front (ui/) sees these and nothing of the
 * engine's structs: it holds an as_session *, an as_program *, ... and
 * reads them through view_api.h and engine.h. The engine's own headers
 * (src/attnscope/) define the structs and include this file, so each type
 * here is defined once. */
#ifndef ATTNSCOPE_TYPES_H
#define ATTNSCOPE_TYPES_H

#include <stdint.h>

/* The engine's objects, opaque to a front. */
typedef struct as_session as_session;
typedef struct as_model as_model;
typedef struct as_gguf as_gguf;
typedef struct as_tokenizer as_tokenizer;
typedef struct as_program as_program;
typedef struct as_op as_op;
typedef struct as_attn as_attn;
typedef struct as_capture as_capture;
typedef struct as_interp as_interp;

/* What a hook point holds (its role); views and exports switch on it. */
typedef enum as_hook_kind {
    AS_HK_EMBED, AS_HK_POS_EMBED, AS_HK_RESID_PRE,
    AS_HK_LN1_SCALE, AS_HK_LN1_NORMALIZED,
    AS_HK_Q, AS_HK_K, AS_HK_V, AS_HK_ROT_Q, AS_HK_ROT_K,
    AS_HK_ATTN_SCORES, AS_HK_PATTERN, AS_HK_Z, AS_HK_ATTN_OUT, AS_HK_RESID_MID,
    AS_HK_LN2_SCALE, AS_HK_LN2_NORMALIZED,
    AS_HK_MLP_PRE, AS_HK_MLP_PRE_LINEAR, AS_HK_MLP_POST, AS_HK_MLP_OUT, AS_HK_RESID_POST,
    AS_HK_LNF_SCALE, AS_HK_LNF_NORMALIZED, AS_HK_LOGITS,
    /* per-head norms of q and k before rotary (Qwen 3, Gemma 3) */
    AS_HK_Q_NORM_SCALE, AS_HK_Q_NORM_NORMALIZED, AS_HK_K_NORM_SCALE, AS_HK_K_NORM_NORMALIZED,
    /* norms after attention and MLP (Gemma 2, 3): the sublayer's own
     * output, then the norm whose output is hook_attn_out / hook_mlp_out */
    AS_HK_ATTN_RESULT, AS_HK_LN1_POST_SCALE, AS_HK_LN1_POST_NORMALIZED,
    AS_HK_MLP_RESULT, AS_HK_LN2_POST_SCALE, AS_HK_LN2_POST_NORMALIZED,
    /* encoders (BERT, as TransformerLens's HookedEncoder names them under
     * the scopes "embed" and "mlm_head"): token-type embeddings, the
     * LayerNorm over the summed embeddings, the masked-LM head's dense
     * layer and activation, and the pooled vector of an embedding model */
    AS_HK_TYPE_EMBED, AS_HK_EMBED_LN_SCALE, AS_HK_EMBED_LN_NORMALIZED,
    AS_HK_EMBED_SUM, AS_HK_HEAD_PRE, AS_HK_HEAD_POST, AS_HK_POOLED,
    /* encoder-decoders (as TransformerLens's HookedEncoderDecoder names
     * them): a decoder block's cross-attention output and the residual
     * after it, its third norm, and the encoder's final norm */
    AS_HK_CROSS_ATTN_OUT, AS_HK_RESID_MID_CROSS, AS_HK_LN3_SCALE, AS_HK_LN3_NORMALIZED,
    AS_HK_ENC_LNF_SCALE, AS_HK_ENC_LNF_NORMALIZED,
    /* vision (ViT): the linear map of each flattened patch, with [CLS]
     * at position 0 (embed.hook_patch_embed) */
    AS_HK_PATCH_EMBED,
    /* an additive bias on an attention site's scores, [head, n_q, n_k]
     * like them: T5's relative position bias (attn.hook_position_bias),
     * included in hook_attn_scores as TransformerLens's T5 includes it */
    AS_HK_ATTN_BIAS,
    /* a routed MLP (mixture of experts): the router's logits and softmax
     * weights over every expert [E], the k experts chosen (int32) and the
     * weights applied to them [k]; each chosen expert's activations in
     * slot layout [k, d_expert] (its gate, up and product) and its output
     * [k, d_model], whose gated sum is hook_mlp_out */
    AS_HK_ROUTER_LOGITS, AS_HK_EXPERT_WEIGHTS, AS_HK_EXPERT_INDICES, AS_HK_EXPERT_GATES,
    AS_HK_EXPERTS_PRE, AS_HK_EXPERTS_PRE_LINEAR, AS_HK_EXPERTS_POST, AS_HK_EXPERTS_OUT,
    /* a shared expert beside the routed ones (Qwen-MoE): the routed
     * experts' gated sum, the shared expert's SwiGLU and output, its
     * sigmoid gate (logit and value, one a position) */
    AS_HK_ROUTED_OUT, AS_HK_SHARED_PRE, AS_HK_SHARED_PRE_LINEAR, AS_HK_SHARED_POST, AS_HK_SHARED_OUT,
    AS_HK_SHARED_GATE_LOGIT, AS_HK_SHARED_GATE,
    /* multi-head latent attention (DeepSeek-V2/V3): q's low-rank latent
     * and its RMSNorm; the compressed key-value latent [kv_lora] and its
     * RMSNorm; the rotary key shared by every head [1, rope dims]; the
     * latent expanded per head [head, nope + d_v] and the keys' part
     * without rotary [head, nope]. hook_k is then [k_nope, k_pe] per
     * head, hook_rot_q / hook_rot_k the same with the last rope dims
     * rotated. */
    AS_HK_Q_LATENT, AS_HK_Q_A_NORM_SCALE, AS_HK_Q_A_NORM_NORMALIZED,
    AS_HK_KV_LATENT, AS_HK_KV_A_NORM_SCALE, AS_HK_KV_A_NORM_NORMALIZED,
    AS_HK_K_PE, AS_HK_KV, AS_HK_K_NOPE,
    /* MLA in its absorbed form (attn_k_b, attn_v_b; one key-value head
     * holding the latent): q's part without rotary taken into the latent
     * space per head [head, kv_lora], the rotated part [head, rope], the
     * two side by side [head, kv_lora + rope], and the mix over the latent
     * [head, kv_lora] that attn_v_b turns into hook_z */
    AS_HK_Q_ABSORBED, AS_HK_Q_PE, AS_HK_Q_MQA, AS_HK_Z_LATENT,
    /* TransformerLens's optional hooks, in a program built with them
     * (as_program_build_opts): each head's output through its slice of
     * W_O [head, d_model] before the sum over heads and the bias
     * (attn.hook_result, use_attn_result); the residual stream entering
     * the attention and the MLP sub-blocks, before their norms
     * (hook_attn_in, hook_mlp_in: use_attn_in, use_hook_mlp_in) */
    AS_HK_HEAD_RESULT, AS_HK_ATTN_IN, AS_HK_MLP_IN,
    AS_HK_COUNT
} as_hook_kind;

/* Which attention site of a layer a view or a figure shows: the output
 * stream's self-attention (a decoder's or an encoder's only one), its
 * cross-attention over the source, or the source stream's own
 * self-attention (an encoder-decoder's encoder). */
typedef enum as_site_pick { AS_PICK_SELF, AS_PICK_CROSS, AS_PICK_SOURCE } as_site_pick;

/* How a pixel stream's image is cut into patches: a square image of
 * `size` pixels a side and `channels` planes (the stream's input,
 * [channels][size][size]), patches of `patch` pixels a side on a `grid` x
 * `grid` lattice, read row by row; each flattened as [channel][y][x]
 * (the order of a Conv2d kernel's weights). */
typedef struct as_patch_spec {
    int channels, size, patch, grid;
} as_patch_spec;

typedef enum as_resize { AS_RESIZE_BILINEAR, AS_RESIZE_NEAREST } as_resize;

/* transformers' image processor as a preprocessor_config.json says. */
typedef struct as_pil_spec {
    int on;              /* 0: the torch preparation (as_image_spec's resize) */
    int resample;        /* AS_PIL_* */
    int resize_h, resize_w;  /* do_resize to these (0: no resize) ... */
    int shortest_edge;   /* ... or this side for the shorter edge, keeping the aspect (CLIP) */
    int crop_h, crop_w;  /* do_center_crop (0: none) */
    double rescale;      /* do_rescale's factor (1: none) */
} as_pil_spec;

/* What a model wants of its input. */
typedef struct as_image_spec {
    int channels;      /* 1 or 3 */
    int size;          /* the square side, in pixels */
    as_resize resize;
    float mean[3], std[3];
    as_pil_spec pil;
} as_image_spec;

#define AS_NORM_TOP 4 /* largest-magnitude input dimensions kept per token */

/* What a norm saw at one token: the statistics an engineer checks first
 * when a layer misbehaves. `var` is the variance (LayerNorm) or the mean
 * square (RMSNorm); scale = sqrt(var + eps). */
typedef struct as_norm_stat {
    float mean, var, scale, min, max;
    int top_dim[AS_NORM_TOP];
    float top_val[AS_NORM_TOP];
} as_norm_stat;

/* What stands at a stream's position, for labels: a token id, or a name
 * where the input is not a token: a pixel stream's "CLS" (position 0) and
 * "r3c5" (the patch at row 3, column 5 of the grid, 0-based). */
typedef struct as_position {
    int32_t token;     /* -1 when `name` labels the position */
    char name[32];
} as_position;

#endif
