/* tensor_names: the GGUF tensor names the architecture files read (and the
 * llama2.c and Hugging Face readers write), as llama.cpp names them
 * (llama-arch.cpp's LLM_TENSOR_NAMES), one table per family. Each is a
 * name template without its ".weight" / ".bias" suffix, "%d" the block
 * (and, for the encoder-decoders, a leading "%s" the stack: "enc", "dec").
 * They are string literals, so that a format and a static table both use
 * them: snprintf(n, sizeof n, AS_TN_ATTN_Q ".weight", l), or
 * {"model.layers.%d.self_attn.q_proj.weight", AS_TN_ATTN_Q ".weight", ...}. */
#ifndef ATTNSCOPE_TENSOR_NAMES_H
#define ATTNSCOPE_TENSOR_NAMES_H

/* ---- decoders and encoders: llama.cpp's blk.N.* (llama, qwen2, qwen2moe,
 * qwen3, gemma*, phi3, deepseek2, gpt2, bert, nomic-bert) ---- */
#define AS_TN_BLK "blk.%d."                 /* a block's prefix */
#define AS_TN_TOKEN_EMBD "token_embd"
#define AS_TN_POS_EMBD "position_embd"
#define AS_TN_TOKEN_TYPES "token_types"
#define AS_TN_TOKEN_EMBD_NORM "token_embd_norm"
#define AS_TN_OUTPUT_NORM "output_norm"
#define AS_TN_OUTPUT "output"
#define AS_TN_ROPE_FREQS "rope_freqs"
#define AS_TN_ROPE_FACTORS_LONG "rope_factors_long"
#define AS_TN_ROPE_FACTORS_SHORT "rope_factors_short"
#define AS_TN_ATTN_NORM AS_TN_BLK "attn_norm"
#define AS_TN_ATTN_QKV AS_TN_BLK "attn_qkv"
#define AS_TN_ATTN_Q AS_TN_BLK "attn_q"
#define AS_TN_ATTN_K AS_TN_BLK "attn_k"
#define AS_TN_ATTN_V AS_TN_BLK "attn_v"
#define AS_TN_ATTN_OUT AS_TN_BLK "attn_output"
#define AS_TN_ATTN_Q_NORM AS_TN_BLK "attn_q_norm"
#define AS_TN_ATTN_K_NORM AS_TN_BLK "attn_k_norm"
#define AS_TN_ATTN_POST_NORM AS_TN_BLK "post_attention_norm"
#define AS_TN_ATTN_OUT_NORM AS_TN_BLK "attn_output_norm"     /* BERT's Post-LN */
#define AS_TN_FFN_NORM AS_TN_BLK "ffn_norm"
#define AS_TN_FFN_GATE AS_TN_BLK "ffn_gate"
#define AS_TN_FFN_UP AS_TN_BLK "ffn_up"
#define AS_TN_FFN_DOWN AS_TN_BLK "ffn_down"
#define AS_TN_FFN_POST_NORM AS_TN_BLK "post_ffw_norm"
#define AS_TN_LAYER_OUT_NORM AS_TN_BLK "layer_output_norm"   /* BERT's Post-LN */
/* routed MLPs (experts) and shared experts */
#define AS_TN_FFN_GATE_INP AS_TN_BLK "ffn_gate_inp"
#define AS_TN_FFN_GATE_EXPS AS_TN_BLK "ffn_gate_exps"
#define AS_TN_FFN_UP_EXPS AS_TN_BLK "ffn_up_exps"
#define AS_TN_FFN_DOWN_EXPS AS_TN_BLK "ffn_down_exps"
#define AS_TN_FFN_EXP_PROBS_B AS_TN_BLK "exp_probs_b"
#define AS_TN_FFN_GATE_INP_SHEXP AS_TN_BLK "ffn_gate_inp_shexp"
#define AS_TN_FFN_GATE_SHEXP AS_TN_BLK "ffn_gate_shexp"
#define AS_TN_FFN_UP_SHEXP AS_TN_BLK "ffn_up_shexp"
#define AS_TN_FFN_DOWN_SHEXP AS_TN_BLK "ffn_down_shexp"
/* multi-head latent attention (deepseek2) */
#define AS_TN_ATTN_Q_A AS_TN_BLK "attn_q_a"
#define AS_TN_ATTN_Q_A_NORM AS_TN_BLK "attn_q_a_norm"
#define AS_TN_ATTN_Q_B AS_TN_BLK "attn_q_b"
#define AS_TN_ATTN_KV_A_MQA AS_TN_BLK "attn_kv_a_mqa"
#define AS_TN_ATTN_KV_A_NORM AS_TN_BLK "attn_kv_a_norm"
#define AS_TN_ATTN_KV_B AS_TN_BLK "attn_kv_b"
#define AS_TN_ATTN_K_B AS_TN_BLK "attn_k_b"
#define AS_TN_ATTN_V_B AS_TN_BLK "attn_v_b"

/* ---- the masked-LM head of an encoder (ours: llama.cpp has none) ---- */
#define AS_TN_MLM_DENSE "mlm.dense"
#define AS_TN_MLM_NORM "mlm.norm"
#define AS_TN_MLM_OUTPUT "mlm.output"

/* ---- encoder-decoders (t5, t5encoder, transformer): "%s" the stack,
 * "enc" or "dec"; the embeddings and output are the family above's ---- */
#define AS_TN_ED_BLK "%s.blk.%d."            /* a block's prefix */
#define AS_TN_ED_ATTN_NORM AS_TN_ED_BLK "attn_norm"
#define AS_TN_ED_ATTN_REL_B AS_TN_ED_BLK "attn_rel_b"
#define AS_TN_ED_ATTN_SITE AS_TN_ED_BLK "%s_%s" /* then the site (attn, cross_attn) and q, k, v or o */
#define AS_TN_ED_CROSS_ATTN_NORM AS_TN_ED_BLK "cross_attn_norm"
#define AS_TN_ED_CROSS_ATTN_REL_B AS_TN_ED_BLK "cross_attn_rel_b"
#define AS_TN_ED_FFN_NORM AS_TN_ED_BLK "ffn_norm"
#define AS_TN_ED_FFN_GATE AS_TN_ED_BLK "ffn_gate"
#define AS_TN_ED_FFN_UP AS_TN_ED_BLK "ffn_up"
#define AS_TN_ED_FFN_DOWN AS_TN_ED_BLK "ffn_down"
#define AS_TN_ENC_OUTPUT_NORM "enc.output_norm"
#define AS_TN_DEC_OUTPUT_NORM "dec.output_norm"
#define AS_TN_DEC_TOKEN_EMBD "dec.token_embd"

/* ---- vision transformers (vit): llama.cpp's CLIP layout, v.* ---- */
#define AS_TN_V_BLK "v.blk.%d."              /* a block's prefix */
#define AS_TN_V_PATCH_EMBD "v.patch_embd"
#define AS_TN_V_CLASS_EMBD "v.class_embd"
#define AS_TN_V_POS_EMBD "v.position_embd"
#define AS_TN_V_POST_LN "v.post_ln"
#define AS_TN_V_HEAD "v.head"                /* ours: the classification head */
#define AS_TN_V_LN1 AS_TN_V_BLK "ln1"
#define AS_TN_V_ATTN_Q AS_TN_V_BLK "attn_q"
#define AS_TN_V_ATTN_K AS_TN_V_BLK "attn_k"
#define AS_TN_V_ATTN_V AS_TN_V_BLK "attn_v"
#define AS_TN_V_ATTN_OUT AS_TN_V_BLK "attn_out"
#define AS_TN_V_LN2 AS_TN_V_BLK "ln2"
#define AS_TN_V_FFN_UP AS_TN_V_BLK "ffn_up"
#define AS_TN_V_FFN_DOWN AS_TN_V_BLK "ffn_down"

#endif
