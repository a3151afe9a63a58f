/* ViT (Dosovitskiy et al. 2021) as torchvision's VisionTransformer
 * computes it, stored in the layout of llama.cpp's CLIP vision tower
 * (tools/mtmd/clip-impl.h: `clip.vision.*` keys, `v.*` tensors) with a
 * classification head of ours (`v.head.*`, class names in
 * `clip.vision.class_names`); models/recipes/convert_vit.py writes it.
 *
 * The image (channels x size x size, resized and normalised as the file
 * says) is cut into patch x patch squares read row by row; each is
 * flattened and mapped by the patch embedding (a Conv2d kernel viewed as
 * a matrix), [CLS] goes first, learned positions are added. Pre-LN
 * blocks: ln1, attention over every position (no mask), add; ln2, MLP
 * with the exact (erf) GELU, add. Then the final LayerNorm (v.post_ln)
 * and the head; the class logits are the head's output at [CLS]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/image.h"
#include "attnscope/model.h"
#include "program_build.h"
#include "tensor_names.h"

typedef struct layer {
    as_weight wq, wk, wv, wo, w_up, w_down;
    const float *bq, *bk, *bv, *bo, *b_up, *b_down;
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
} layer;

typedef struct weights {
    as_image_spec image;
    as_patch_spec patch;
    as_weight patch_w;     /* [d][channels * patch * patch] */
    const float *patch_b, *cls;
    as_weight pos_embd;    /* [1 + grid²][d] */
    const float *post_w, *post_b;
    as_weight head;        /* [classes][d] */
    const float *head_b;
    layer layers[];
} weights;

/* A required positive integer clip.vision.{suffix}, at most max. */
static int get_int(const as_gguf *g, const char *suffix, int max, int *out, as_error *err)
{
    char key[96];
    uint32_t v;
    snprintf(key, sizeof key, "clip.vision.%s", suffix);
    if (as_gguf_get_u32(g, key, &v, err))
        return AS_ERR;
    if (v == 0 || v > (uint32_t)max)
        return as_error_set(err, "%s: %s = %u is out of range (1..%d)", g->path, key, v, max);
    *out = (int)v;
    return AS_OK;
}

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    int size, patch;
    if (get_int(g, "image_size", 1 << 14, &size, err) || get_int(g, "patch_size", 1 << 10, &patch, err) ||
        get_int(g, "embedding_length", 1 << 16, &c->d_model, err) ||
        get_int(g, "feed_forward_length", 1 << 18, &c->d_ff, err) ||
        get_int(g, "block_count", 1 << 10, &c->n_layer, err) ||
        get_int(g, "attention.head_count", 1 << 10, &c->n_head, err))
        return AS_ERR;
    if (size % patch)
        return as_error_set(err, "%s: clip.vision.image_size %d is not a multiple of patch_size %d", g->path, size,
                            patch);
    if (c->d_model % c->n_head)
        return as_error_set(err, "%s: clip.vision.embedding_length %d is not a multiple of head_count %d", g->path,
                            c->d_model, c->n_head);
    int grid = size / patch;
    if ((long)grid * grid + 1 > (1L << 20))
        return as_error_set(err, "%s: %d x %d patches is more than attnscope runs", g->path, grid, grid);
    c->n_ctx = 1 + grid * grid;
    c->n_head_kv = c->n_head;
    c->d_head = c->d_model / c->n_head;
    c->eps = 1e-6f; /* torchvision's ViT */
    if (as_gguf_get_f32_opt(g, "clip.vision.attention.layer_norm_epsilon", &c->eps, err))
        return AS_ERR;
    if (!(c->eps >= 0.0f && c->eps < 1.0f))
        return as_error_set(err, "%s: clip.vision.attention.layer_norm_epsilon = %g is outside [0, 1)", g->path,
                            (double)c->eps);
    return AS_OK;
}

/* The class names label the head's outputs (the model's vocabulary). */
static int vocabulary(as_tokenizer **out, const as_gguf *g, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, "clip.vision.class_names");
    if (!kv)
        return as_error_set(err, "%s: key 'clip.vision.class_names' is missing (the names of the head's classes)",
                            g->path);
    if (kv->type != AS_GGUF_ARRAY || kv->arr_type != AS_GGUF_STRING || kv->arr_len == 0)
        return as_error_set(err, "%s: key 'clip.vision.class_names': expected a non-empty array of strings",
                            g->path);
    if (as_tokenizer_labels(out, (const char *const *)kv->strs, kv->str_lens, (size_t)kv->arr_len, err))
        return as_error_prefix(err, "%s: clip.vision.class_names", g->path);
    return AS_OK;
}

/* A Hugging Face directory's preprocessor_config.json, as arch_hf.c put
 * it in our keys (clip.vision.attnscope.*): transformers' preparation
 * through PIL instead of torch's. */
static int read_pil(const as_gguf *g, as_image_spec *im, as_error *err)
{
    bool on = false;
    if (as_gguf_get_bool_opt(g, "clip.vision.attnscope.pil", &on, err))
        return AS_ERR;
    if (!on)
        return AS_OK;
    const char *keys[6] = {"resample", "resize_height", "resize_width", "shortest_edge", "crop_height", "crop_width"};
    uint32_t v[6] = {2, 0, 0, 0, 0, 0};
    float factor = 1.0f / 255;
    for (int i = 0; i < 6; i++) {
        char key[96];
        snprintf(key, sizeof key, "clip.vision.attnscope.%s", keys[i]);
        if (as_gguf_get_u32_opt(g, key, &v[i], err))
            return AS_ERR;
        if (v[i] > (i == 0 ? 5u : 16384u))
            return as_error_set(err, "%s: %s = %u is out of range (0..%u)", g->path, key, v[i], i == 0 ? 5u : 16384u);
    }
    if (as_gguf_get_f32_opt(g, "clip.vision.attnscope.rescale_factor", &factor, err))
        return AS_ERR;
    if (!(factor > 0 && isfinite(factor)))
        return as_error_set(err, "%s: clip.vision.attnscope.rescale_factor = %g is not a positive number", g->path,
                            (double)factor);
    /* float32 holds 1/255 inexactly: transformers multiplies by the double */
    double f = fabs((double)factor * 255.0 - 1.0) < 1e-6 ? 1.0 / 255 : (double)factor;
    im->pil = (as_pil_spec){1, (int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5], f};
    return AS_OK;
}

/* mean, std (one value per channel), channels and the resize mode. */
static int read_image(as_model *m, weights *W, int grid, int patch, as_error *err)
{
    const as_gguf *g = m->gguf;
    uint32_t ch = 3;
    const char *resize = "bilinear";
    if (as_gguf_get_u32_opt(g, "clip.vision.channels", &ch, err))
        return AS_ERR;
    if (ch != 1 && ch != 3)
        return as_error_set(err, "%s: clip.vision.channels = %u: attnscope reads grey (1) or RGB (3) images", g->path,
                            ch);
    if (as_gguf_find(g, "clip.vision.resize") && as_gguf_get_str(g, "clip.vision.resize", &resize, err))
        return AS_ERR;
    W->image = (as_image_spec){.channels = (int)ch, .size = grid * patch};
    if (as_resize_parse(resize, &W->image.resize, err))
        return as_error_prefix(err, "%s: clip.vision.resize", g->path);
    const char *keys[2] = {"clip.vision.image_mean", "clip.vision.image_std"};
    for (int k = 0; k < 2; k++) {
        const as_gguf_kv *kv = as_gguf_find(g, keys[k]);
        if (!kv)
            return as_error_set(err, "%s: key '%s' is missing", g->path, keys[k]);
        if (kv->type != AS_GGUF_ARRAY || kv->arr_type == AS_GGUF_STRING || kv->arr_len != ch)
            return as_error_set(err, "%s: key '%s': expected %u numbers (one per channel)", g->path, keys[k], ch);
        for (uint32_t c = 0; c < ch; c++) {
            float v = (float)as_gguf_arr_f64(kv, c);
            if (!isfinite(v) || (k == 1 && v <= 0))
                return as_error_set(err, "%s: %s[%u] = %g is not a %s", g->path, keys[k], c, (double)v,
                                    k ? "positive number" : "number");
            (k ? W->image.std : W->image.mean)[c] = v;
        }
    }
    W->patch = (as_patch_spec){(int)ch, grid * patch, patch, grid};
    return read_pil(g, &W->image, err);
}

#define N(name) (snprintf(n, sizeof n, name, l), n)

static int load_layer(as_model *m, layer *L, int l, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, f = (uint64_t)m->cfg.d_ff;
    char n[96];
    return as_model_vector(m, N(AS_TN_V_LN1 ".weight"), d, false, &L->ln1_w, err) ||
           as_model_vector(m, N(AS_TN_V_LN1 ".bias"), d, false, &L->ln1_b, err) ||
           as_model_matrix(m, N(AS_TN_V_ATTN_Q ".weight"), d, d, false, &L->wq, err) ||
           as_model_vector(m, N(AS_TN_V_ATTN_Q ".bias"), d, false, &L->bq, err) ||
           as_model_matrix(m, N(AS_TN_V_ATTN_K ".weight"), d, d, false, &L->wk, err) ||
           as_model_vector(m, N(AS_TN_V_ATTN_K ".bias"), d, false, &L->bk, err) ||
           as_model_matrix(m, N(AS_TN_V_ATTN_V ".weight"), d, d, false, &L->wv, err) ||
           as_model_vector(m, N(AS_TN_V_ATTN_V ".bias"), d, false, &L->bv, err) ||
           as_model_matrix(m, N(AS_TN_V_ATTN_OUT ".weight"), d, d, false, &L->wo, err) ||
           as_model_vector(m, N(AS_TN_V_ATTN_OUT ".bias"), d, false, &L->bo, err) ||
           as_model_vector(m, N(AS_TN_V_LN2 ".weight"), d, false, &L->ln2_w, err) ||
           as_model_vector(m, N(AS_TN_V_LN2 ".bias"), d, false, &L->ln2_b, err) ||
           as_model_matrix(m, N(AS_TN_V_FFN_UP ".weight"), d, f, false, &L->w_up, err) ||
           as_model_vector(m, N(AS_TN_V_FFN_UP ".bias"), f, false, &L->b_up, err) ||
           as_model_matrix(m, N(AS_TN_V_FFN_DOWN ".weight"), f, d, false, &L->w_down, err) ||
           as_model_vector(m, N(AS_TN_V_FFN_DOWN ".bias"), d, false, &L->b_down, err);
}

#undef N

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model;
    weights *W = calloc(1, sizeof *W + (size_t)c->n_layer * sizeof W->layers[0]);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    int size, patch;
    if (get_int(m->gguf, "image_size", 1 << 14, &size, err) || get_int(m->gguf, "patch_size", 1 << 10, &patch, err) ||
        read_image(m, W, size / patch, patch, err))
        return AS_ERR;
    uint64_t P = (uint64_t)patch, C = (uint64_t)W->patch.channels;
    if (as_model_conv_matrix(m, AS_TN_V_PATCH_EMBD ".weight", P, P, C, d, &W->patch_w, err) ||
        as_model_vector(m, AS_TN_V_PATCH_EMBD ".bias", d, false, &W->patch_b, err) ||
        as_model_vector(m, AS_TN_V_CLASS_EMBD, d, false, &W->cls, err) ||
        as_model_matrix(m, AS_TN_V_POS_EMBD ".weight", d, (uint64_t)c->n_ctx, false, &W->pos_embd, err) ||
        as_model_vector(m, AS_TN_V_POST_LN ".weight", d, false, &W->post_w, err) ||
        as_model_vector(m, AS_TN_V_POST_LN ".bias", d, false, &W->post_b, err) ||
        as_model_matrix(m, AS_TN_V_HEAD ".weight", d, (uint64_t)c->n_vocab, false, &W->head, err) ||
        as_model_vector(m, AS_TN_V_HEAD ".bias", (uint64_t)c->n_vocab, false, &W->head_b, err))
        return AS_ERR;
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(m, &W->layers[l], l, err))
            return AS_ERR;
    return AS_OK;
}

/* Pre-LN, as torchvision's EncoderBlock; returns resid_post. */
static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const layer *W = &((const weights *)p->model->weights)->layers[l];
    int H = c->n_head, dh = c->d_head, f = c->d_ff, d = c->d_model;
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->ln1_w, W->ln1_b, AS_NORM_LAYER, c->eps, "ln1");
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, n1, &W->wq, W->bq, 2, H, dh, "q = ln1 · W_Q + b_Q");
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_ESSENTIAL, n1, &W->wk, W->bk, 2, H, dh,
                                  "k = ln1 · W_K + b_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, n1, &W->wv, W->bv, 2, H, dh,
                                  "v = ln1 · W_V + b_V");
    as_attn site = {.layer = l, .q = q, .k = k, .v = v, .n_head = H, .n_head_kv = H, .d_qk = dh, .d_v = dh,
                    .scale = 1.0f / sqrtf((float)dh), .mask = AS_MASK_NONE, .bias = -1};
    int z = as_program_add_attention(p, &site, "scores = q · kᵀ / sqrt(d_head), no mask");
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, &W->wo, W->bo, 1, d, 0,
                                   "attn_out = z · W_O + b_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ln2_w, W->ln2_b, AS_NORM_LAYER, c->eps, "ln2");
    int mp = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, &W->w_up, W->b_up, 1, f, 0,
                                   "mlp pre = ln2 · W_in + b_in");
    int post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_GELU, l, post, mp, -1, "mlp post = gelu_erf(pre)")->gelu = AS_GELU_ERF;
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, &W->w_down, W->b_down, 1, d, 0,
                                   "mlp_out = post · W_out + b_out");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

static int build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const weights *W = p->model->weights;
    int d = c->d_model;
    int s = as_program_add_stream(p, "patches", AS_INPUT_PIXELS, c->n_ctx, false);
    p->streams[s].image = W->image;
    as_program_scope_name(p, "embed");
    int pe = as_program_add_patch_embed(p, &W->patch_w, W->patch_b, W->cls, &W->patch);
    as_program_scope_name(p, NULL);
    int pos = as_program_add_hook(p, AS_HK_POS_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_POS_EMBED, -1, pos, -1, -1, "pos_embed = W_pos[position]")->w = W->pos_embd;
    int resid = pe;
    for (int l = 0; l < c->n_layer; l++) {
        as_program_scope(p, l);
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        if (l == 0)
            as_program_add_op(p, AS_OP_ADD, l, pre, pe, pos, "resid_pre = patch_embed + pos_embed");
        else
            as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1, "resid_pre = previous resid_post");
        resid = block(p, l, pre);
    }
    as_program_scope(p, -1);
    int lg = as_program_add_unembed(p, resid, W->post_w, W->post_b, AS_NORM_LAYER, c->eps, &W->head, W->head_b, 0);
    snprintf(p->ops[p->unembed].text, sizeof p->ops[p->unembed].text, "class logits = ln_final · W_head + b_head");
    as_program_rename(p, lg, "head.hook_out");
    /* The class is read at [CLS]; every row is computed (the head at each
     * patch is what the logit lens shows there). */
    p->ops[p->unembed].last_row_only = false;
    p->logits_pos = 0;
    (void)err;
    return AS_OK;
}

const as_arch as_arch_vit = {
    .gguf_name = "vit",
    .block_prefix = "v.blk.",
    .read_config = read_config,
    .load = load,
    .build = build,
    .vocabulary = vocabulary,
};
