/* hf_internal: what the readers of a Hugging Face directory share: the
 * view being built (src/hf_view.c: JSON files, config.json, the view's
 * metadata and tensors), src/safetensors.c, src/hf_tokenizer.c (with
 * src/hf_tok_common.c, src/hf_tok_unigram.c), src/hf.c (the directory)
 * and src/arch_hf.c (each model_type's names and keys).
 * Not part of the public API. */
#ifndef ATTNSCOPE_HF_INTERNAL_H
#define ATTNSCOPE_HF_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/hf.h"

/* One tensor of a safetensors file, as the file stores it. */
typedef struct as_hf_tensor {
    char *name;
    as_ggml_type type;
    size_t esize;          /* bytes per element */
    uint32_t n_dims;       /* 1..4 (a scalar is read as [1]) */
    uint64_t shape[4];     /* HF (PyTorch) order: outermost first */
    uint64_t n_elements, n_bytes, offset; /* offset: in its file */
    const uint8_t *data;   /* into the file's map */
    const char *file;      /* the file's path, for messages */
    const char *dtype;     /* as the header names it ("F32", "I64", ...) */
    bool readable;         /* a float type the kernels read (F32, F16, BF16); others only as buffers to skip */
    bool used;
} as_hf_tensor;

typedef struct as_hf_file {
    char *path;
    void *map;
    size_t size;
} as_hf_file;

typedef struct as_hf {
    char *dir;
    char config_path[4200];
    json_t *config;          /* config.json, or its text_config for a multimodal wrapper */
    json_t *root;            /* config.json when config is its text_config, else NULL */
    const char *model_type;
    const char *alt_prefix;  /* tried before a name when the name is absent ("transformer.") */
    const char *model_prefix; /* tried instead of a name's leading "model." ("model.language_model.") */
    long long vocab_default;  /* the family's vocab_size when config.json gives none (0: none) */
    as_hf_tensor *t;
    size_t n, cap;
    json_t *names;           /* tensor name -> index into t (Jansson's hash table) */
    as_hf_file *files;
    size_t n_files;
    void **bufs;             /* converted tensors and metadata arrays the view points into */
    size_t n_bufs;
    as_gguf *g;              /* the view being built */
    char llama_note[640];    /* what llama.cpp will compute otherwise than the directory says ("": nothing) */
    char note[600];          /* what the view skipped or renamed, for the model's load note ("": nothing) */
    int n_legacy;            /* tensors found under a legacy name (LayerNorm gamma/beta) */
    char legacy_example[160];
    uint64_t tensor_cap;
} as_hf;

/* ---- config.json (hf.c): absent keys take def unless required; a value
 * of the wrong type or outside lo..hi is an error naming the file and key. */
int as_hf_cfg_int(as_hf *h, const char *key, bool required, long long def, long long lo, long long hi,
                  long long *out, as_error *err);
int as_hf_cfg_num(as_hf *h, const char *key, bool required, double def, double lo, double hi, double *out,
                  as_error *err);
int as_hf_cfg_bool(as_hf *h, const char *key, bool def, bool *out, as_error *err);
/* A JSON file holding an object (NULL: err says why, naming the file);
 * read only if a regular file, and protected with the view (file.h).
 * as_hf_read_json: any JSON value. */
json_t *as_hf_load_json(as_hf *h, const char *path, as_error *err);
json_t *as_hf_read_json(as_hf *h, const char *path, as_error *err);
/* The object under key, NULL when absent or null. */
const json_t *as_hf_cfg_obj(as_hf *h, const char *key);

/* ---- the view's metadata (false: out of memory) */
bool as_hf_kv_u32(as_hf *h, const char *key, uint32_t v);
bool as_hf_kv_f32(as_hf *h, const char *key, float v);
bool as_hf_kv_str(as_hf *h, const char *key, const char *s);
bool as_hf_kv_bool(as_hf *h, const char *key, bool v);
bool as_hf_kv_f32s(as_hf *h, const char *key, const float *v, uint64_t n);
/* n strings, copied. */
bool as_hf_kv_strs(as_hf *h, const char *key, const char *const *s, uint64_t n);

/* An array of n strings; takes strs and lens (malloc'd) whatever happens. */
bool as_hf_kv_take_strs(as_hf *h, const char *key, char **strs, uint64_t *lens, uint64_t n);
/* An array of n float32 or int32 (4 bytes each) in a buffer the view keeps. */
bool as_hf_kv_arr4(as_hf *h, const char *key, as_gguf_type type, const void *data, uint64_t n);
/* A buffer freed with the view (NULL: out of memory). */
void *as_hf_keep(as_hf *h, size_t bytes);
/* "[a, b, c]" */
void as_hf_shape_str(const uint64_t *shape, uint32_t n, char *buf, size_t cap);

/* ---- the readers: model.safetensors or its shards (safetensors.c),
 * tokenizer.json (hf_tokenizer.c) */
int as_hf_read_weights(as_hf *h, as_error *err);
int as_hf_read_tokenizer(as_hf *h, as_error *err);

/* ---- tokenizer.json's model as it is read (hf_tokenizer.c: BPE and
 * WordPiece; hf_tok_unigram.c: Unigram) into the view's token table */
typedef struct tok_read {
    as_hf *h;
    char path[4200];
    json_t *root, *model, *vocab, *added;
    char **tokens;
    uint64_t *lens;
    int32_t *types;
    size_t n;
} tok_read;

/* (hf_tok_common.c) o is an object whose "type" is type. */
bool as_hf_is_type(const json_t *o, const char *type);
/* o itself or, in a Sequence (its members under list_key), its member
 * of that type; NULL: none. */
const json_t *as_hf_find_type(const json_t *o, const char *list_key, const char *type);
/* content's id in model.vocab or added_tokens; -1: neither. */
long long as_hf_token_id(tok_read *r, const char *content);
/* The table padded to config.json's vocab_size with "[PADn]" tokens. */
int as_hf_tok_pad(tok_read *r, as_error *err);
/* add_bos / add_eos (and their ids) from the post-processor's single-sequence template. */
void as_hf_tok_template(tok_read *r, bool *add_bos, bool *add_eos, long long *bos, long long *eos);
/* (hf_tok_unigram.c) A Unigram model as GGUF's "t5" tokenizer keys. */
int as_hf_tok_unigram(tok_read *r, as_error *err);

/* ---- the view's tensors */
typedef enum as_hf_xform {
    AS_HF_AS_IS,      /* in place: the file's bytes */
    AS_HF_TRANSPOSE,  /* a 2-D [a, b] stored as [b, a] (GPT-2's Conv1D) */
    AS_HF_PAIRS,      /* rows of `heads` heads from rotate-half order to adjacent pairs */
    AS_HF_PLUS_ONE,   /* a norm weight stored as w for 1 + w (Gemma), as float32 1 + w */
    AS_HF_SQUEEZE,    /* in place, its leading dimensions of 1 dropped (ViT's [1, 1, d] cls_token) */
} as_hf_xform;

/* The HF tensor hf_name (or alt_prefix + hf_name), NULL when absent. A
 * name ending in .weight or .bias is also found under the legacy spelling
 * transformers renames on load (.gamma, .beta: TensorFlow-era LayerNorms,
 * bert-base-uncased's). */
as_hf_tensor *as_hf_find(as_hf *h, const char *hf_name);
/* A tensor no family maps that every family skips: a buffer PyTorch saved
 * with the weights (position_ids, rotary inv_freq, GPT-2's causal-mask
 * bias and masked_bias). */
bool as_hf_known_buffer(const char *hf_name);
/* The "type" of tokenizer.json's "model" object, given or (absent) inferred
 * as the tokenizers library's untagged deserializer infers it; NULL: none. */
const char *as_hf_model_type(const json_t *model);
/* Adds hf_name to the view as gguf_name after checking its shape against
 * want (n_dims entries, HF order; `what` says where config.json's numbers
 * come from, e.g. "[n_embd, 3 x n_embd]"). Absent: an error naming the
 * tensor and the file it belongs in, unless optional (then *found false). */
int as_hf_add(as_hf *h, const char *hf_name, const char *gguf_name, as_hf_xform x, int heads, uint32_t n_dims,
              const uint64_t *want, const char *what, bool optional, bool *found, as_error *err);
/* Adds a float32 vector computed here (e.g. rope_freqs). */
int as_hf_add_f32(as_hf *h, const char *gguf_name, const float *v, uint64_t n, as_error *err);

/* ---- tensors by rule (hf_view.c), for the families */
/* One tensor: HF name (printf'd with the layer), GGUF name, conversion,
 * HF shape from config.json's numbers and how to say it. */
typedef struct as_hf_rule {
    const char *hf, *gguf;
    as_hf_xform x;
    int heads;          /* for AS_HF_PAIRS */
    uint32_t n_dims;
    uint64_t d0, d1;
    const char *what;
    bool optional;
} as_hf_rule;

int as_hf_add_rules(as_hf *h, const as_hf_rule *r, size_t n, int layer, as_error *err);
/* The same rules for each of n_layer blocks. */
int as_hf_add_layer_rules(as_hf *h, const as_hf_rule *r, size_t n, int n_layer, as_error *err);
/* "DIR: out of memory" */
int as_hf_oom(as_hf *h, as_error *err);
bool as_hf_ends_with(const char *s, const char *suffix);

/* ---- the families (arch_hf.c; those with an encoder: arch_hf_encoders.c) */
typedef struct as_hf_family {
    const char *model_type;
    const char *arch;                       /* general.architecture of the view */
    int (*map)(as_hf *h, as_error *err);    /* hyperparameters and tensors */
    bool (*ignored)(const char *hf_name);   /* buffers a checkpoint may hold and nothing reads */
    bool no_tokenizer;                      /* reads no tokenizer.json (an image model: its labels are the vocabulary) */
} as_hf_family;

const as_hf_family *as_hf_family_find(const char *model_type);
int as_hf_bert_map(as_hf *h, as_error *err);
bool as_hf_bert_ignored(const char *name);
int as_hf_t5_map(as_hf *h, as_error *err);
bool as_hf_t5_ignored(const char *name);
int as_hf_vit_map(as_hf *h, as_error *err);
bool as_hf_vit_ignored(const char *name);

/* A multimodal model whose language model is one of the families: its
 * config.json nests that model's settings in text_config, its checkpoint
 * prefixes that model's tensors, and the other towers' tensors are left
 * unread (the view is of the language model alone). */
typedef struct as_hf_wrapper {
    const char *model_type;                 /* config.json's ("gemma3") */
    const char *text_type;                  /* text_config's model_type, which it may leave out ("gemma3_text") */
    const char *prefix;                     /* the language model's names as the hub's files have them ("language_model.") */
    const char *model_prefix;               /* ... as newer transformers save them, for "model." ("model.language_model.") */
    bool (*other)(const char *hf_name);     /* the other towers' tensors */
    const char *view_of;                    /* what the view is, for `info` */
} as_hf_wrapper;

const as_hf_wrapper *as_hf_wrapper_find(const char *model_type);
/* "gpt2, llama, mistral", for messages. */
const char *as_hf_family_names(void);

#endif
