/* Hugging Face directories (hf.h): tests/fixtures/hf/tiny-gpt2 and
 * tiny-llama are the GGUF fixtures' PyTorch weights in HF's layout
 * (models/recipes/hf_fixtures.py: Conv1D weights transposed, q/k rows in
 * rotate-half order, the llama one in two shards). Every hook and the
 * logits from the directory equal the GGUF fixture's within 1e-5 (measured:
 * identical), and the logits PyTorch's (the fixture's unembed.hook_out.npy)
 * within 1e-5 (measured 4.3e-6 and 3.8e-6); tokenizer.json gives the GGUF
 * tokenizer's ids. Broken directories, written to a temporary folder, are
 * refused by name. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/hf.h"
#include "attnscope/tokenizer.h"
#include "helpers.h"
#include "../src/hf_internal.h" /* as_hf_model_type */

static void feed_fixture_tokens(as_session *s, const char *name)
{
    char path[256], cmd[512];
    /* an image model's fixture: its image */
    snprintf(path, sizeof path, "fixtures/%s/image.png", name);
    if (access(path, R_OK) == 0) {
        snprintf(cmd, sizeof cmd, "image %s; finish", path);
        run_ok(s, cmd);
        return;
    }
    /* an encoder-decoder's fixture: its source first */
    snprintf(path, sizeof path, "fixtures/%s/source.npy", name);
    run_npy_ids(s, "source-ids", path, true);
    snprintf(path, sizeof path, "fixtures/%s/tokens.npy", name);
    run_npy_ids(s, "prompt-ids", path, false);
    /* an encoder's fixture is a sentence pair: its token types too */
    snprintf(path, sizeof path, "fixtures/%s/types.npy", name);
    run_npy_ids(s, "token-types", path, true);
    run_ok(s, "finish");
}

static float *values(as_session *s, int h, size_t *count)
{
    int n = s->cap->filled[h];
    *count = as_capture_count(s->cap, h, n);
    float *v = malloc(*count * sizeof *v);
    as_capture_copy(s->cap, h, n, v);
    return v;
}

/* The model at `other` (default: fixtures/hf/NAME) against fixtures/NAME.gguf. */
static void same_as_gguf_at(const char *name, const char *other)
{
    char gguf[256], dir[256], ref_path[256];
    snprintf(gguf, sizeof gguf, "fixtures/%s.gguf", name);
    if (other)
        snprintf(dir, sizeof dir, "%s", other);
    else
        snprintf(dir, sizeof dir, "fixtures/hf/%s", name);
    as_session *a = open_session(gguf, 64), *b = open_session(dir, 64);
    feed_fixture_tokens(a, name);
    feed_fixture_tokens(b, name);
    cr_assert_eq(a->prog->n_hooks, b->prog->n_hooks);
    int checked = 0;
    for (int h = 0; h < a->prog->n_hooks; h++) {
        const char *hn = a->prog->hooks[h].name;
        cr_assert_str_eq(hn, b->prog->hooks[h].name);
        cr_assert_eq(a->cap->filled[h], b->cap->filled[h], "%s", hn);
        size_t na, nb;
        float *va = values(a, h, &na), *vb = values(b, h, &nb);
        cr_assert_eq(na, nb, "%s: %zu vs %zu values", hn, na, nb);
        double worst = 0;
        for (size_t i = 0; i < na; i++) {
            if (isinf(va[i])) {
                cr_assert(isinf(vb[i]), "%s[%zu]: masked in the GGUF, %g here", hn, i, vb[i]);
                continue;
            }
            worst = fmax(worst, fabs((double)va[i] - vb[i]));
        }
        cr_expect_leq(worst, 1e-5, "%s: %s: max abs diff %.3g from the GGUF", name, hn, worst);
        free(va);
        free(vb);
        checked++;
    }
    cr_assert_gt(checked, 20);
    /* and PyTorch's logits */
    int lg = as_program_hook(b->prog, AS_HK_LOGITS, -1);
    snprintf(ref_path, sizeof ref_path, "fixtures/%s/%s.npy", name, b->prog->hooks[lg].name);
    npy ref;
    cr_assert_eq(npy_read(ref_path, &ref), 0, "cannot read %s", ref_path);
    size_t n;
    float *got = values(b, lg, &n);
    cr_assert_eq(n, ref.count);
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)got[i] - ref.f[i]));
    cr_assert_leq(worst, 1e-5, "%s: logits differ from PyTorch's by %.3g", name, worst);
    free(got);
    npy_free(&ref);
    close_session(a);
    close_session(b);
}

static void same_as_gguf(const char *name) { same_as_gguf_at(name, NULL); }

Test(hf, gpt2_directory_runs_as_its_gguf) { same_as_gguf("tiny-gpt2"); }
Test(hf, sharded_llama_directory_runs_as_its_gguf) { same_as_gguf("tiny-llama"); }
/* rope_scaling yarn; Mistral's sliding_window with linear scaling; Qwen 3's
 * q/k norms, head_dim apart from hidden_size / heads, NEOX rotary (rows as HF has them) */
Test(hf, llama_yarn_directory_runs_as_its_gguf) { same_as_gguf("tiny-llama-yarn"); }
Test(hf, mistral_directory_runs_as_its_gguf) { same_as_gguf("tiny-mistral"); }
Test(hf, qwen3_directory_runs_as_its_gguf) { same_as_gguf("tiny-qwen3"); }
/* BertForMaskedLM: token types, the masked-LM head, mean pooling from 1_Pooling */
Test(hf, bert_directory_runs_as_its_gguf) { same_as_gguf("tiny-bert"); }
/* Gemma 3: norms stored as w for 1 + w, q/k norms, post-norms, local layers with their own rotary base,
 * linear scaling on the global ones */
/* Gemma 1: norms stored as w, post_attention_layernorm the MLP's, multi-query attention */
Test(hf, gemma_directory_runs_as_its_gguf) { same_as_gguf("tiny-gemma"); }
Test(hf, gemma3_directory_runs_as_its_gguf) { same_as_gguf("tiny-gemma3"); }
/* T5ForConditionalGeneration: Flan-T5's gated GELU (the tied output stored
 * as lm_head.weight), T5's ReLU with an encoder deeper than the decoder */
Test(hf, t5_directory_runs_as_its_gguf) { same_as_gguf("tiny-t5"); }
Test(hf, t5_relu_directory_runs_as_its_gguf) { same_as_gguf("tiny-t5-relu"); }
/* ViTForImageClassification with preprocessor_config.json: the same image
 * gives every hook of the GGUF twin and torchvision's logits */
Test(hf, vit_directory_runs_as_its_gguf) { same_as_gguf("tiny-vit"); }

/* tokenizer.json's ids (of the directory `other`, default fixtures/hf/NAME)
 * against the GGUF tokenizer's, BOS as each adds it. */
static void same_ids_at(const char *name, const char *other)
{
    static const char *const texts[] = {
        "the cat sat on the mat, the dog ate é!",
        "the cat sat on a mat, hi é!",
        "  then the fish\n\nat the table.  ",
        "THE Dog's 123 mats; x=y+1 \t!",
        "日本語 and emoji \xf0\x9f\x98\x80 ok",
        "",
        "<|endoftext|> <s> the end",
    };
    char gguf[256], dir[256];
    snprintf(gguf, sizeof gguf, "fixtures/%s.gguf", name);
    snprintf(dir, sizeof dir, "%s", other ? other : "");
    if (!other)
        snprintf(dir, sizeof dir, "fixtures/hf/%s", name);
    as_session *a = open_session(gguf, 16), *b = open_session(dir, 16);
    const as_tokenizer *ta = a->model->tok, *tb = b->model->tok;
    cr_assert_eq(as_tokenizer_vocab_size(ta), as_tokenizer_vocab_size(tb));
    cr_assert_eq(as_tokenizer_add_bos(ta), as_tokenizer_add_bos(tb), "%s: add_bos differs", name);
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        int32_t *ia, *ib;
        size_t na, nb;
        as_error err = {{0}};
        cr_assert_eq(as_tokenizer_encode(ta, texts[k], strlen(texts[k]), as_tokenizer_add_bos(ta), &ia, &na, &err),
                     AS_OK, "%s", err.msg);
        cr_assert_eq(as_tokenizer_encode(tb, texts[k], strlen(texts[k]), as_tokenizer_add_bos(tb), &ib, &nb, &err),
                     AS_OK, "%s", err.msg);
        cr_assert_eq(na, nb, "%s: '%s': %zu ids vs %zu", name, texts[k], na, nb);
        for (size_t i = 0; i < na; i++)
            cr_assert_eq(ia[i], ib[i], "%s: '%s': id %zu is %d, the GGUF's %d", name, texts[k], i, ib[i], ia[i]);
        free(ia);
        free(ib);
    }
    close_session(a);
    close_session(b);
}

static void same_ids(const char *name) { same_ids_at(name, NULL); }

Test(hf, byte_level_bpe_gives_the_gguf_ids) { same_ids("tiny-gpt2"); }
Test(hf, sentencepiece_bpe_gives_the_gguf_ids) { same_ids("tiny-llama"); }
Test(hf, wordpiece_gives_the_gguf_ids) { same_ids("tiny-bert"); }

Test(hf, info_card_of_a_directory)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_hf_open(&g, "fixtures/hf/tiny-gpt2/", &err), AS_OK, "%s", err.msg);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    as_gguf_print_info(g, f);
    as_model_print_check(g, f, NULL);
    fclose(f);
    cr_assert(strstr(buf, "Hugging Face directory"), "%s", buf);
    cr_assert(strstr(buf, "blk.1.attn_qkv.weight"), "%s", buf);
    cr_assert(strstr(buf, "every tensor gpt2 needs is here, and every tensor here is used"), "%s", buf);
    free(buf);
    as_gguf_close(g);
}

/* ---------------------------------------------------------------- broken directories */

typedef struct tmpdir {
    char path[64];
} tmpdir;

static void copy_file(const char *from, const char *to, long keep)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    cr_assert(in && out, "copy %s -> %s", from, to);
    char buf[65536];
    size_t n, total = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (keep >= 0 && total + n > (size_t)keep)
            n = (size_t)keep - total;
        fwrite(buf, 1, n, out);
        total += n;
        if (keep >= 0 && total >= (size_t)keep)
            break;
    }
    fclose(in);
    fclose(out);
}

/* A copy of fixtures/hf/NAME (weights too unless with_weights is false). */
static void make_copy(tmpdir *t, const char *name, bool with_weights)
{
    snprintf(t->path, sizeof t->path, "/tmp/attnscope-hf-XXXXXX");
    cr_assert(mkdtemp(t->path));
    static const char *const files[] = {"config.json", "tokenizer.json", "model.safetensors",
                                        "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[256], to[256];
        snprintf(from, sizeof from, "fixtures/hf/%s/%s", name, files[i]);
        snprintf(to, sizeof to, "%s/%s", t->path, files[i]);
        if (access(from, R_OK) == 0 && (with_weights || i < 2))
            copy_file(from, to, -1);
    }
}

static void remove_copy(tmpdir *t)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->path);
    cr_assert_eq(system(cmd), 0);
}

static void write_bytes(const tmpdir *t, const char *file, const void *a, size_t na, const void *b, size_t nb)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", t->path, file);
    FILE *f = fopen(p, "wb");
    cr_assert(f);
    fwrite(a, 1, na, f);
    if (nb)
        fwrite(b, 1, nb, f);
    fclose(f);
}

/* A safetensors file: the 8-byte length, the header (padded with spaces
 * to 8 bytes, as HF pads it, when claimed_len is its length), data_bytes
 * zero bytes. */
static void write_safetensors(const tmpdir *t, const char *file, const char *header, uint64_t claimed_len,
                              size_t data_bytes)
{
    uint8_t len[8];
    size_t hl = strlen(header);
    if (claimed_len == hl)
        claimed_len = hl = (hl + 7) / 8 * 8;
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(claimed_len >> (8 * i));
    uint8_t *body = calloc(1, hl + data_bytes + 1);
    memset(body, ' ', hl);
    memcpy(body, header, strlen(header));
    write_bytes(t, file, len, 8, body, hl + data_bytes);
    free(body);
}

static void refused(const tmpdir *t, const char *want1, const char *want2, const char *want3)
{
    as_model *m = NULL;
    as_error err = {{0}};
    int rc = as_model_load(&m, t->path, &err);
    as_model_free(m);
    cr_assert_neq(rc, AS_OK, "the broken directory loaded");
    cr_assert(strstr(err.msg, want1), "message '%s' lacks '%s'", err.msg, want1);
    cr_assert(!want2 || strstr(err.msg, want2), "message '%s' lacks '%s'", err.msg, want2);
    cr_assert(!want3 || strstr(err.msg, want3), "message '%s' lacks '%s'", err.msg, want3);
}

Test(hf, truncated_safetensors_is_refused_by_file_and_tensor)
{
    tmpdir t;
    make_copy(&t, "tiny-gpt2", false);
    char from[] = "fixtures/hf/tiny-gpt2/model.safetensors", to[256];
    snprintf(to, sizeof to, "%s/model.safetensors", t.path);
    struct stat st;
    cr_assert_eq(stat(from, &st), 0);
    copy_file(from, to, (long)st.st_size - 100);
    refused(&t, "model.safetensors", "run past the end of the file", "tensor '");
    /* cut inside the header */
    copy_file(from, to, 40);
    refused(&t, "model.safetensors", "truncated", NULL);
    copy_file(from, to, 5);
    refused(&t, "model.safetensors", "truncated", NULL);
    remove_copy(&t);
}

Test(hf, overlapping_or_missized_tensors_are_refused_by_name)
{
    tmpdir t;
    make_copy(&t, "tiny-gpt2", false);
    const char *overlap = "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,32]},"
                          "\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[16,48]}}";
    write_safetensors(&t, "model.safetensors", overlap, strlen(overlap), 48);
    refused(&t, "model.safetensors", "'wte.weight'", "overlap");
    /* an empty tensor between two that overlap hides nothing */
    const char *around = "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                         "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                         "\"wpe.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}";
    write_safetensors(&t, "model.safetensors", around, strlen(around), 16);
    refused(&t, "model.safetensors", "'wte.weight'", "'wpe.weight' (from byte");
    const char *missized = "{\"wte.weight\":{\"dtype\":\"F16\",\"shape\":[2,4],\"data_offsets\":[0,32]}}";
    write_safetensors(&t, "model.safetensors", missized, strlen(missized), 32);
    refused(&t, "'wte.weight'", "hold 32 bytes", "needs 16");
    const char *past = "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,32]}}";
    write_safetensors(&t, "model.safetensors", past, strlen(past), 20);
    refused(&t, "'wte.weight'", "run past the end", "model.safetensors");
    const char *dtype = "{\"wte.weight\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
    write_safetensors(&t, "model.safetensors", dtype, strlen(dtype), 16);
    refused(&t, "'wte.weight'", "I64", NULL);
    remove_copy(&t);
}

Test(hf, header_over_100_mb_is_refused)
{
    tmpdir t;
    make_copy(&t, "tiny-gpt2", false);
    write_safetensors(&t, "model.safetensors", "{}", 101ull << 20, 0);
    refused(&t, "model.safetensors", "100 MB", NULL);
    write_safetensors(&t, "model.safetensors", "{\"a\": [", 7, 0);
    refused(&t, "model.safetensors", "header JSON", NULL);
    remove_copy(&t);
}

Test(hf, missing_shard_is_named_with_a_tensor_it_holds)
{
    tmpdir t;
    make_copy(&t, "tiny-llama", true);
    char p[256];
    snprintf(p, sizeof p, "%s/model-00002-of-00002.safetensors", t.path);
    cr_assert_eq(unlink(p), 0);
    refused(&t, "model-00002-of-00002.safetensors", "cannot open", "model.layers.1.");
    remove_copy(&t);
}

static void set_config(const tmpdir *t, const char *from, const char *to)
{
    char p[256];
    snprintf(p, sizeof p, "%s/config.json", t->path);
    FILE *f = fopen(p, "rb");
    cr_assert(f);
    static char buf[8192], out[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *at = strstr(buf, from);
    cr_assert(at, "config.json has no '%s'", from);
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, to, at + strlen(from));
    write_bytes(t, "config.json", out, strlen(out), NULL, 0);
}

Test(hf, config_disagreeing_with_a_tensor_or_unknown_is_refused)
{
    tmpdir t;
    make_copy(&t, "tiny-gpt2", true);
    set_config(&t, "\"n_inner\": 128", "\"n_inner\": 64");
    refused(&t, "model.safetensors", "'h.0.mlp.c_fc.weight'", "config.json says [32, 64]");
    set_config(&t, "\"model_type\": \"gpt2\"", "\"model_type\": \"gpt_neox\"");
    refused(&t, "config.json", "model_type 'gpt_neox'", NULL);
    remove_copy(&t);
    make_copy(&t, "tiny-llama", true);
    set_config(&t, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    /* tied, yet lm_head.weight is there: it is used (llama.cpp would drop it) */
    as_model *m = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_model_load(&m, t.path, &err), AS_OK, "%s", err.msg);
    as_model_free(m);
    set_config(&t, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4");
    refused(&t, "'model.layers.0.self_attn.k_proj.weight'", "shape [16, 32]", "[32, 32]");
    remove_copy(&t);
}

/* The same weights stored as F16 and BF16 (in place, not converted): the
 * logits of the float64 PyTorch pass over the weights so rounded
 * (NAME.logits.npy, from the recipe), within 1e-5 as for F32 (measured
 * 4.5e-6 for F16, 5.3e-6 for BF16, logits up to 9.9). */
static void half_matches_pytorch(const char *name, const char *fixture, as_ggml_type type)
{
    char dir[256], ref_path[256];
    snprintf(dir, sizeof dir, "fixtures/hf/%s", name);
    snprintf(ref_path, sizeof ref_path, "fixtures/hf/%s.logits.npy", name);
    as_session *s = open_session(dir, 64);
    const as_gguf_tensor *t = as_gguf_tensor_find(s->model->gguf, "blk.0.ffn_up.weight");
    cr_assert(t);
    cr_assert_eq(t->type, type, "%s: stored as %d", name, t->type);
    feed_fixture_tokens(s, fixture);
    int lg = as_program_hook(s->prog, AS_HK_LOGITS, -1);
    npy ref;
    cr_assert_eq(npy_read(ref_path, &ref), 0, "cannot read %s", ref_path);
    size_t n;
    float *got = values(s, lg, &n);
    cr_assert_eq(n, ref.count);
    double worst = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs((double)got[i] - ref.f[i]));
        big = fmax(big, fabs(ref.f[i]));
    }
    cr_assert_leq(worst, 1e-5, "%s: logits (up to %.3g) differ from PyTorch's by %.3g", name, big, worst);
    free(got);
    npy_free(&ref);
    close_session(s);
}

Test(hf, f16_weights_match_pytorch) { half_matches_pytorch("tiny-gpt2-f16", "tiny-gpt2", AS_GGML_F16); }
Test(hf, bf16_weights_match_pytorch) { half_matches_pytorch("tiny-llama-bf16", "tiny-llama", AS_GGML_BF16); }

/* Llama 3's rope_scaling becomes rope_freqs.weight, as llama.cpp's
 * converter makes it: each frequency's divisor equals what transformers
 * applies (llama3-rope-factors.npy, computed its way by the recipe), 1e-6. */
Test(hf, llama3_rope_scaling_gives_transformers_divisors)
{
    tmpdir t;
    make_copy(&t, "tiny-llama", true);
    set_config(&t, "\"rope_scaling\": null",
               "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
               "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}");
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_hf_open(&g, t.path, &err), AS_OK, "%s", err.msg);
    const as_gguf_tensor *f = as_gguf_tensor_find(g, "rope_freqs.weight");
    cr_assert(f, "no rope_freqs.weight");
    npy ref;
    cr_assert_eq(npy_read("fixtures/hf/llama3-rope-factors.npy", &ref), 0);
    cr_assert_eq(f->n_elements, ref.count);
    float got[64];
    cr_assert_eq(as_tensor_to_f32(f, got, &err), AS_OK, "%s", err.msg);
    for (size_t i = 0; i < ref.count; i++)
        cr_assert_float_eq(got[i], ref.f[i], 1e-6 * ref.f[i], "divisor %zu: %g, transformers %g", i, got[i], ref.f[i]);
    npy_free(&ref);
    as_gguf_close(g);
    as_model *m = NULL;
    cr_assert_eq(as_model_load(&m, t.path, &err), AS_OK, "%s", err.msg);
    as_model_free(m);
    remove_copy(&t);
}

/* convert DIR OUT.gguf: the GGUF it writes runs as the fixture GGUF, every
 * hook (llama.cpp's pass over it is held to attnscope's by make
 * llama-compare, tests/peer/hf_convert.sh); an unwritable path is refused
 * by name and leaves nothing. */
static void converts(const char *name)
{
    char dir[256], out[] = "/tmp/attnscope-hf-convert-XXXXXX.gguf";
    int fd = mkstemps(out, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(dir, sizeof dir, "fixtures/hf/%s", name);
    as_error err = {{0}};
    cr_assert_eq(as_hf_to_gguf(dir, out, NULL, 0, &err), AS_OK, "%s", err.msg);
    same_as_gguf_at(name, out);
    unlink(out);
}

Test(hf, converted_gpt2_runs_as_its_gguf) { converts("tiny-gpt2"); }
Test(hf, converted_sharded_llama_runs_as_its_gguf) { converts("tiny-llama"); }
Test(hf, converted_bert_runs_as_its_gguf) { converts("tiny-bert"); }

/* Every hook of the model at path against the recipe's PyTorch pass
 * (fixtures/hf/REF/HOOK.npy, one file per hook) within 1e-5, masked
 * entries masked in both; every file of REF is met. */
static void matches_pytorch_at_every_hook(const char *path, const char *ref)
{
    char dir[256];
    snprintf(dir, sizeof dir, "hf/%s", ref);
    as_session *s = open_session(path, 64);
    feed_fixture_tokens(s, dir);
    int checked = 0;
    for (int h = 0; h < s->prog->n_hooks; h++) {
        char file[512];
        snprintf(file, sizeof file, "fixtures/hf/%s/%s.npy", ref, s->prog->hooks[h].name);
        if (access(file, R_OK) != 0)
            continue;
        npy r;
        cr_assert_eq(npy_read(file, &r), 0, "cannot read %s", file);
        size_t n;
        float *got = values(s, h, &n);
        cr_assert_eq(n, r.count, "%s: %zu values, PyTorch %zu", s->prog->hooks[h].name, n, r.count);
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            if (isinf(r.f[i])) {
                cr_assert(isinf(got[i]), "%s[%zu]: masked in PyTorch's pass, %g here", s->prog->hooks[h].name, i,
                          got[i]);
                continue;
            }
            worst = fmax(worst, fabs((double)got[i] - r.f[i]));
        }
        cr_expect_leq(worst, 1e-5, "%s: %s differs from PyTorch's pass by %.3g", path, s->prog->hooks[h].name,
                      worst);
        free(got);
        npy_free(&r);
        checked++;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls fixtures/hf/%s/*.npy | grep -vc /tokens.npy", ref);
    FILE *p = popen(cmd, "r");
    int files = 0;
    cr_assert(p && fscanf(p, "%d", &files) == 1);
    pclose(p);
    cr_assert_eq(checked, files, "%s: %d hooks compared, %d files in %s", path, checked, files, ref);
    cr_log_info("%s: %d hooks within 1e-5 of PyTorch's", path, checked);
    close_session(s);
}

/* Gemma 2 (tiny-gemma2's weights, one rotary base as Gemma2Config has):
 * soft-capped scores and logits, every other layer windowed, post-norms,
 * 1 + w norms, sqrt(d) embedding scale: every hook of the directory and
 * of the GGUF convert writes from it is PyTorch's (1e-5). A config the
 * arch cannot follow is refused by key. */
Test(hf, gemma2_directory_matches_pytorch_at_every_hook)
{
    matches_pytorch_at_every_hook("fixtures/hf/tiny-gemma2-hf", "tiny-gemma2-hf.ref");
    char out[] = "/tmp/attnscope-hf-gemma2-XXXXXX.gguf", note[512];
    int fd = mkstemps(out, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    as_error err = {{0}};
    cr_assert_eq(as_hf_to_gguf("fixtures/hf/tiny-gemma2-hf", out, note, sizeof note, &err), AS_OK, "%s", err.msg);
    matches_pytorch_at_every_hook(out, "tiny-gemma2-hf.ref");
    unlink(out);
    static const struct { const char *from, *to, *want; } bad[] = {
        {"\"final_logit_softcapping\": 5.0", "\"final_logit_softcapping\": null", "final_logit_softcapping null"},
        {"\"query_pre_attn_scalar\": 16", "\"query_pre_attn_scalar\": 144", "query_pre_attn_scalar 144"},
        {"\"rope_theta\": 1000000.0", "\"rope_theta\": 1000000.0, \"rope_scaling\": {\"rope_type\": \"linear\", "
         "\"factor\": 2.0}", "rope_scaling"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        tmpdir t;
        make_copy(&t, "tiny-gemma2-hf", true);
        set_config(&t, bad[c].from, bad[c].to);
        refused(&t, "config.json", bad[c].want, NULL);
        remove_copy(&t);
    }
}

/* hidden_act "gelu" (BERT's usual exact erf GELU; tiny-bert's weights):
 * the MLP's and the masked-LM head's GELU are the erf form, so the hooks
 * after them and the logits equal PyTorch's F.gelu pass (the recipe's
 * tiny-bert-erf.ref/, itself held to nn.TransformerEncoderLayer with
 * activation=F.gelu) within 1e-5, where the tanh form (the GGUF fixture)
 * differs by more than 100 times that. */
static void erf_matches_pytorch(const char *model)
{
    static const char *const hooks[] = {
        "blocks.0.mlp.hook_pre", "blocks.0.mlp.hook_post", "blocks.0.hook_mlp_out", "blocks.0.ln2.hook_normalized",
        "blocks.1.mlp.hook_post", "blocks.1.ln2.hook_normalized", "pooler.hook_out", "mlm_head.hook_post",
        "mlm_head.ln.hook_normalized", "unembed.hook_out"};
    as_session *s = open_session(model, 64);
    feed_fixture_tokens(s, "hf/tiny-bert-erf.ref");
    for (size_t k = 0; k < sizeof hooks / sizeof hooks[0]; k++) {
        char path[256];
        snprintf(path, sizeof path, "fixtures/hf/tiny-bert-erf.ref/%s.npy", hooks[k]);
        int h = -1;
        for (int i = 0; i < s->prog->n_hooks; i++)
            if (!strcmp(s->prog->hooks[i].name, hooks[k]))
                h = i;
        cr_assert_geq(h, 0, "%s: no hook %s", model, hooks[k]);
        npy ref;
        cr_assert_eq(npy_read(path, &ref), 0, "cannot read %s", path);
        size_t n;
        float *got = values(s, h, &n);
        cr_assert_eq(n, ref.count, "%s: %zu values, PyTorch %zu", hooks[k], n, ref.count);
        double worst = 0;
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs((double)got[i] - ref.f[i]));
        cr_assert_leq(worst, 1e-5, "%s: %s differs from PyTorch's erf GELU pass by %.3g", model, hooks[k], worst);
        cr_log_info("%s: %s within %.2g of PyTorch's", model, hooks[k], worst);
        free(got);
        npy_free(&ref);
    }
    close_session(s);
}

Test(hf, bert_erf_gelu_directory_matches_pytorch)
{
    erf_matches_pytorch("fixtures/hf/tiny-bert-erf");
    /* the test tells the two GELUs apart: the tanh pass's logits are far from the erf pass's */
    npy a, b;
    cr_assert_eq(npy_read("fixtures/tiny-bert/unembed.hook_out.npy", &a), 0);
    cr_assert_eq(npy_read("fixtures/hf/tiny-bert-erf.ref/unembed.hook_out.npy", &b), 0);
    cr_assert_eq(a.count, b.count);
    double apart = 0;
    for (size_t i = 0; i < a.count; i++)
        apart = fmax(apart, fabs((double)a.f[i] - b.f[i]));
    cr_assert_geq(apart, 1e-3, "tanh and erf logits differ by only %.3g", apart);
    npy_free(&a);
    npy_free(&b);
}

/* convert keeps the erf GELU in our key (attnscope's pass over the GGUF is
 * PyTorch's) and says llama.cpp will not follow it; a tanh directory has
 * nothing to say of its GELU (only, as every WordPiece directory, of the
 * library's normalisation, which llama.cpp does not follow either). */
Test(hf, converted_erf_bert_keeps_its_gelu_and_says_llama_cpp_does_not)
{
    char out[] = "/tmp/attnscope-hf-convert-XXXXXX.gguf", note[512];
    int fd = mkstemps(out, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    as_error err = {{0}};
    cr_assert_eq(as_hf_to_gguf("fixtures/hf/tiny-bert-erf", out, note, sizeof note, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(note, "llama.cpp") && strstr(note, "tanh") && strstr(note, "erf"), "note: '%s'", note);
    erf_matches_pytorch(out);
    cr_assert_eq(as_hf_to_gguf("fixtures/hf/tiny-bert", out, note, sizeof note, &err), AS_OK, "%s", err.msg);
    cr_assert(!strstr(note, "erf") && !strstr(note, "tanh") && strstr(note, "tokenizer.attnscope.normalizer"),
              "note: '%s'", note);
    unlink(out);
}

/* hidden_act other than the three GELUs, or not a string, is refused by
 * file and key; our GGUF key with a value it does not know likewise. */
Test(hf, bert_unknown_hidden_act_is_refused_by_name)
{
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    set_config(&t, "\"hidden_act\": \"gelu_new\"", "\"hidden_act\": \"relu\"");
    refused(&t, "config.json", "hidden_act 'relu'", NULL);
    set_config(&t, "\"hidden_act\": \"relu\"", "\"hidden_act\": 7");
    refused(&t, "config.json", "hidden_act", "string");
    remove_copy(&t);
    as_gguf *g;
    as_gguf_writer *w = edit_gguf("fixtures/tiny-bert.gguf", NULL, NULL, &g);
    as_gguf_writer_set_str(w, "bert.attnscope.gelu", "sigmoid");
    char msg[512];
    load_refused(w, g, msg, sizeof msg);
    cr_assert(strstr(msg, "bert.attnscope.gelu") && strstr(msg, "sigmoid"), "%s", msg);
}

/* T5 configurations attnscope does not run as transformers does are
 * refused by file and key: a tied output (transformers rescales it), an
 * MLP other than relu / gated-gelu, another bucket distance. */
Test(hf, t5_unread_configs_are_refused_by_name)
{
    tmpdir t;
    make_copy(&t, "tiny-t5", true);
    set_config(&t, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    refused(&t, "config.json", "tie_word_embeddings", "d_model^-0.5");
    set_config(&t, "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
    set_config(&t, "\"gated-gelu\"", "\"gated-silu\"");
    refused(&t, "config.json", "feed_forward_proj 'gated-silu'", NULL);
    set_config(&t, "\"gated-silu\"", "\"relu\"");
    refused(&t, "config.json", "wi_1", NULL);
    set_config(&t, "\"relu\"", "\"gated-gelu\"");
    set_config(&t, "\"relative_attention_max_distance\": 128", "\"relative_attention_max_distance\": 64");
    refused(&t, "config.json", "relative_attention_max_distance 64", NULL);
    remove_copy(&t);
}

/* A Unigram tokenizer.json (T5's layout: Precompiled charsmap, Strip,
 * Replace " {2,}", Metaspace, $A </s>), made by the recipe from
 * fixtures/t5-ugm.gguf's SentencePiece vocabulary: read as llama.cpp's
 * "t5" tokenizer, its ids equal SentencePiece's own on the 1,200 strings
 * of fixtures/t5-ugm.spm.txt (the strings where llama.cpp and
 * SentencePiece agree), every one; with special tokens it ends in </s>. */
Test(hf, unigram_tokenizer_gives_sentencepiece_ids)
{
    as_gguf *g;
    as_tokenizer *t;
    as_error err = {{0}};
    cr_assert_eq(as_hf_open(&g, "fixtures/hf/t5-ugm", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, g, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_kind(t), AS_TOK_T5);
    FILE *f = fopen("fixtures/t5-ugm.spm.txt", "r");
    cr_assert(f);
    static char line[1 << 16], text[1 << 15];
    size_t total = 0, same = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        cr_assert(tab);
        size_t n = 0;
        for (char *h = line; h + 1 < tab; h += 2) {
            unsigned b;
            cr_assert_eq(sscanf(h, "%2x", &b), 1);
            text[n++] = (char)b;
        }
        int32_t want[4096];
        size_t nw = 0;
        for (char *p = tab + 1, *end; nw < 4096; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p)
                break;
            want[nw++] = (int32_t)v;
        }
        int32_t *ids;
        size_t ni;
        cr_assert_eq(as_tokenizer_tokenize(t, text, n, 0, &ids, &ni, &err), AS_OK, "%s", err.msg);
        bool ok = ni == nw && !memcmp(ids, want, ni * sizeof *ids);
        if (!ok && total - same < 3)
            fprintf(stderr, "t5-ugm directory: line %zu differs from SentencePiece\n", total + 1);
        same += ok;
        total++;
        free(ids);
    }
    fclose(f);
    cr_assert_geq(total, 1000);
    cr_assert_eq(same, total, "%zu of %zu strings give SentencePiece's ids", same, total);
    int32_t *ids;
    size_t ni;
    cr_assert_eq(as_tokenizer_tokenize(t, "Haus", 4, AS_TOK_ADD_SPECIAL, &ids, &ni, &err), AS_OK, "%s", err.msg);
    cr_assert(ni >= 2 && ids[ni - 1] == 1, "no </s> at the end");
    free(ids);
    as_tokenizer_free(t);
    as_gguf_close(g);
}

/* Broken Unigram files are refused by file and what: a vocab entry that is
 * not [piece, score], an added token whose id holds another piece, a
 * charsmap that is not base64, an unknown normalizer. */
Test(hf, broken_unigram_tokenizer_is_refused_by_name)
{
    static const struct { const char *from, *to, *want; } cases[] = {
        {"[\n        \"<pad>\",\n        0.0\n      ]", "[\"<pad>\"]", "model.vocab[0]"},
        {"\"content\": \"</s>\"", "\"content\": \"<s>\"", "added_tokens[1]"},
        {"\"precompiled_charsmap\": \"", "\"precompiled_charsmap\": \"*", "base64"},
        {"\"type\": \"Strip\"", "\"type\": \"NFKC\"", "normalizer 'NFKC'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tmpdir t;
        make_copy(&t, "t5-ugm", true);
        char p[256];
        snprintf(p, sizeof p, "%s/tokenizer.json", t.path);
        FILE *f = fopen(p, "rb");
        cr_assert(f);
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        rewind(f);
        char *buf = malloc((size_t)n + 1), *out = malloc((size_t)n + 64);
        cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        buf[n] = 0;
        char *at = strstr(buf, cases[c].from);
        cr_assert(at, "tokenizer.json has no '%s'", cases[c].from);
        int k = snprintf(out, (size_t)n + 64, "%.*s%s%s", (int)(at - buf), buf, cases[c].to, at + strlen(cases[c].from));
        write_bytes(&t, "tokenizer.json", out, (size_t)k, NULL, 0);
        refused(&t, "tokenizer.json", cases[c].want, NULL);
        free(buf);
        free(out);
        remove_copy(&t);
    }
}

/* A ViT directory's labels and preprocessing: id2label's names label the
 * classes; a gap in id2label, a preprocessor size other than image_size,
 * and an activation other than the erf GELU are refused by file and key. */
Test(hf, vit_labels_and_broken_configs)
{
    as_model *m = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_hf_load(&m, "fixtures/hf/tiny-vit", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(m->cfg.n_vocab, 10);
    as_model_free(m);
    tmpdir t;
    make_copy(&t, "tiny-vit", true);
    char from[256], to[256];
    snprintf(from, sizeof from, "fixtures/hf/tiny-vit/preprocessor_config.json");
    snprintf(to, sizeof to, "%s/preprocessor_config.json", t.path);
    copy_file(from, to, -1);
    set_config(&t, "\"3\": \"three\"", "\"30\": \"three\"");
    refused(&t, "config.json", "id2label", "'30'");
    set_config(&t, "\"30\": \"three\"", "\"3\": \"three\"");
    set_config(&t, "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_new\"");
    refused(&t, "config.json", "hidden_act 'gelu_new'", NULL);
    set_config(&t, "\"hidden_act\": \"gelu_new\"", "\"hidden_act\": \"gelu\"");
    set_config(&t, "\"image_size\": 28", "\"image_size\": 14");
    refused(&t, "preprocessor_config.json", "size 28 x 28", "image_size 14");
    remove_copy(&t);
}

static void write_text(const tmpdir *t, const char *name, const char *text)
{
    write_bytes(t, name, text, strlen(text), NULL, 0);
}

static const char *class_name(const as_model *m, int id)
{
    const char *p = as_tokenizer_piece(m->tok, id);
    return p ? p : "(none)";
}

/* Fine-tuned checkpoints' id2label as the hub has them: integer names
 * ("0": 60, the PlantNet fine-tune in tests/hub/plantnet-vit), keys in
 * another order; what no class list can be (a class named twice, an id
 * out of range, a name that is an object) is refused by key. */
Test(hf, vit_id2label_names_may_be_numbers)
{
    tmpdir t;
    make_copy(&t, "tiny-vit", true);
    set_config(&t, "\"3\": \"three\"", "\"3\": 60");
    set_config(&t, "\"0\": \"zero\"", "\"0\": 2.5");
    set_config(&t, "\"9\": \"nine\"", "\"9\": \"nine\", \"1\": \"one\"");
    set_config(&t, "\"1\": \"one\",\n", "");
    as_model *m = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_model_load(&m, t.path, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(m->cfg.n_vocab, 10);
    cr_assert_str_eq(class_name(m, 3), "60");
    cr_assert_str_eq(class_name(m, 0), "2.5");
    cr_assert_str_eq(class_name(m, 1), "one", "the last key given names class 1");
    cr_assert_str_eq(class_name(m, 9), "nine");
    as_model_free(m);
    set_config(&t, "\"3\": 60", "\"3\": {\"name\": 60}");
    refused(&t, "config.json", "id2label[\"3\"]", "string or a number");
    set_config(&t, "\"3\": {\"name\": 60}", "\"3\": 60, \"03\": 60");
    refused(&t, "config.json", "class 3 is named twice", NULL);
    set_config(&t, "\"3\": 60, \"03\": 60", "\"10\": 60");
    refused(&t, "config.json", "'10' is not a class id in 0..9", NULL);
    remove_copy(&t);
}

/* preprocessor_config.json (of the grey tiny-vit: transformers' PIL
 * preparation in PIL's "L") as transformers reads it: an integer size is a
 * square for ViT and a shortest edge for CLIP (whose crop must then be
 * image_size), legacy files lack do_rescale; what cannot give the model's
 * square is refused by file and key. */
Test(hf, vit_preprocessor_configs_as_transformers_reads_them)
{
    tmpdir t;
    make_copy(&t, "tiny-vit", true);
    struct { const char *pp; int on, resample, rh, rw, edge, ch, cw; } ok[] = {
        {"{\"feature_extractor_type\": \"ViTFeatureExtractor\", \"size\": 28, \"resample\": 2}", 1, 2, 28, 28, 0, 0, 0},
        {"{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": 32, \"crop_size\": 28}", 1, 3, 0, 0, 32, 28, 28},
        {"{\"image_processor_type\": \"DeiTImageProcessor\", \"size\": {\"height\": 32, \"width\": 32}, "
         "\"do_center_crop\": true, \"crop_size\": {\"height\": 28, \"width\": 28}, \"resample\": 1}", 1, 1, 32, 32, 0,
         28, 28},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        write_text(&t, "preprocessor_config.json", ok[i].pp);
        as_session *s = open_session(t.path, 16);
        const as_pil_spec *p = &s->prog->streams[0].image.pil;
        cr_assert(p->on == ok[i].on && p->resample == ok[i].resample && p->resize_h == ok[i].rh &&
                  p->resize_w == ok[i].rw && p->shortest_edge == ok[i].edge && p->crop_h == ok[i].ch &&
                  p->crop_w == ok[i].cw, "%s: on %d resample %d resize %d x %d edge %d crop %d x %d", ok[i].pp, p->on,
                  p->resample, p->resize_h, p->resize_w, p->shortest_edge, p->crop_h, p->crop_w);
        cr_assert_eq(p->rescale, 1.0 / 255, "%s: rescale %.17g", ok[i].pp, p->rescale);
        close_session(s);
    }
    write_text(&t, "preprocessor_config.json", "{\"image_processor_type\": \"CLIPImageProcessor\", \"size\": 28, "
                                                "\"do_center_crop\": false}");
    refused(&t, "preprocessor_config.json", "shortest-edge resize without a centre crop", NULL);
    write_text(&t, "preprocessor_config.json", "{\"size\": {\"height\": 28, \"width\": 30}}");
    refused(&t, "preprocessor_config.json", "size 28 x 30", "image_size 28");
    write_text(&t, "preprocessor_config.json", "{\"size\": 28, \"resample\": 6}");
    refused(&t, "preprocessor_config.json", "resample must be one of PIL's filters", NULL);
    write_text(&t, "preprocessor_config.json", "{\"size\": {\"shortest_edge\": 28, \"longest_edge\": 40}}");
    refused(&t, "preprocessor_config.json", "size must be", NULL);
    write_text(&t, "preprocessor_config.json", "{\"image_processor_type\": \"ConvNextImageProcessor\"}");
    refused(&t, "preprocessor_config.json", "ConvNextImageProcessor is not read", NULL);
    remove_copy(&t);
}

static as_tokenizer *tokenizer_of(const char *path, as_gguf **g)
{
    as_tokenizer *t;
    as_error err = {{0}};
    cr_assert_eq(as_hf_open_any(g, path, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, *g, &err), AS_OK, "%s", err.msg);
    return t;
}

/* StarCoder's pre-tokenizer, Digits(individual_digits) then ByteLevel:
 * read as llama.cpp's "starcoder" (\p{N}, then GPT-2's regex), so a
 * directory's ids equal those of the GGUF tokenizer with that pre type
 * (held to llama.cpp's by tests/test_tok_llama.c); Digits keeping runs of
 * digits together is refused. */
Test(hf, digits_then_byte_level_reads_as_starcoder)
{
    static const char *const texts[] = {"in 2024, 365 days", "x1y22z333", " 7 8  9\n10", "no digits here"};
    tmpdir t;
    make_copy(&t, "tiny-gpt2", true);
    char p[256];
    snprintf(p, sizeof p, "%s/tokenizer.json", t.path);
    FILE *f = fopen(p, "rb");
    cr_assert(f);
    static char buf[1 << 20], out[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *from = "\"pre_tokenizer\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": false,\n"
                       "    \"trim_offsets\": true,\n    \"use_regex\": true\n  },";
    char *at = strstr(buf, from);
    cr_assert(at, "tiny-gpt2's tokenizer.json has no ByteLevel pre_tokenizer as expected");
    const char *digits = "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", "
                         "\"individual_digits\": %s}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
                         "\"trim_offsets\": true, \"use_regex\": true}]},";
    char seq[512];
    snprintf(seq, sizeof seq, digits, "true");
    int k = snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, seq, at + strlen(from));
    write_bytes(&t, "tokenizer.json", out, (size_t)k, NULL, 0);

    as_gguf *gd, *gp, *gs;
    as_tokenizer *dir = tokenizer_of(t.path, &gd), *plain = tokenizer_of("fixtures/hf/tiny-gpt2", &gp);
    /* the GGUF fixture's vocabulary with llama.cpp's starcoder pre type */
    as_gguf *g0;
    as_gguf_writer *w = edit_gguf("fixtures/tiny-gpt2.gguf", "tokenizer.ggml.pre", NULL, &g0);
    as_gguf_writer_set_str(w, "tokenizer.ggml.pre", "starcoder");
    char path[] = "/tmp/attnscope-starcoder-XXXXXX.gguf";
    int fd = mkstemps(path, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    as_error err = {{0}};
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g0);
    as_tokenizer *star = tokenizer_of(path, &gs);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int32_t *a, *b, *c;
        size_t na, nb, nc;
        size_t len = strlen(texts[i]);
        cr_assert_eq(as_tokenizer_tokenize(dir, texts[i], len, 0, &a, &na, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_tokenizer_tokenize(star, texts[i], len, 0, &b, &nb, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_tokenizer_tokenize(plain, texts[i], len, 0, &c, &nc, &err), AS_OK, "%s", err.msg);
        cr_assert(na == nb && !memcmp(a, b, na * sizeof *a), "'%s': the directory's ids differ from starcoder's",
                  texts[i]);
        free(a), free(b), free(c);
    }
    /* tiny-gpt2's vocabulary has no merge across digits, so the ids alone cannot tell the pre types apart */
    const char *pre = NULL;
    cr_assert_eq(as_gguf_get_str(gd, "tokenizer.ggml.pre", &pre, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(pre, "starcoder");
    as_tokenizer_free(dir), as_tokenizer_free(plain), as_tokenizer_free(star);
    as_gguf_close(gd), as_gguf_close(gp), as_gguf_close(gs);
    unlink(path);
    snprintf(seq, sizeof seq, digits, "false");
    k = snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, seq, at + strlen(from));
    write_bytes(&t, "tokenizer.json", out, (size_t)k, NULL, 0);
    refused(&t, "tokenizer.json", "individual_digits", NULL);
    remove_copy(&t);
}

/* t's tokenizer.json with each from replaced by its to (every one must occur). */
static void edit_tokenizer(const tmpdir *t, const char *const *from, const char *const *to, size_t n)
{
    char p[256];
    snprintf(p, sizeof p, "%s/tokenizer.json", t->path);
    FILE *f = fopen(p, "rb");
    cr_assert(f);
    static char buf[1 << 20], out[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    for (size_t i = 0; i < n; i++) {
        char *at = strstr(buf, from[i]);
        cr_assert(at, "tokenizer.json has no '%s'", from[i]);
        snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, to[i], at + strlen(from[i]));
        memcpy(buf, out, strlen(out) + 1);
    }
    write_bytes(t, "tokenizer.json", buf, strlen(buf), NULL, 0);
}

/* Gemma 3's layout of a SentencePiece-style BPE (held to @lenml/tokenizers
 * on its real file by make hf-tokref): a Replace " " -> "▁" normalizer
 * without Prepend, a Split at " " (nothing left to split at), an added
 * token past config.json's vocab_size. tiny-llama's vocabulary so laid out
 * reads as llama.cpp's SPM without the space prefix: the ids of the GGUF
 * fixture with add_space_prefix false; the extra token is left out. A
 * normalizer or pre-tokenizer this does not cover is refused by name. */
Test(hf, gemma3_sentencepiece_layout_reads_without_space_prefix)
{
    static const char *const texts[] = {"the cat sat", " the  mat\n", "x", "<s> the é"};
    static const char *const from[] = {
        "{\n        \"type\": \"Prepend\",\n        \"prepend\": \"\xE2\x96\x81\"\n      },",
        "\"pre_tokenizer\": null",
        "\"added_tokens\": [",
    };
    static const char *const to[] = {
        "",
        "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": "
        "\"MergedWithPrevious\", \"invert\": false}",
        "\"added_tokens\": [{\"id\": 289, \"content\": \"<image_soft_token>\", \"single_word\": false, "
        "\"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": true},",
    };
    tmpdir t;
    make_copy(&t, "tiny-llama", true);
    edit_tokenizer(&t, from, to, 3);
    as_gguf *gd, *g0, *gs;
    as_tokenizer *dir = tokenizer_of(t.path, &gd);
    cr_assert_eq(as_tokenizer_vocab_size(dir), 289, "the token past the embedding was kept");
    as_gguf_writer *w = edit_gguf("fixtures/tiny-llama.gguf", "tokenizer.ggml.add_space_prefix", NULL, &g0);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
    char path[] = "/tmp/attnscope-noprefix-XXXXXX.gguf";
    int fd = mkstemps(path, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    as_error err = {{0}};
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g0);
    as_tokenizer *ref = tokenizer_of(path, &gs);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int32_t *a, *b;
        size_t na, nb, len = strlen(texts[i]);
        cr_assert_eq(as_tokenizer_tokenize(dir, texts[i], len, AS_TOK_PARSE_SPECIAL, &a, &na, &err), AS_OK, "%s",
                     err.msg);
        cr_assert_eq(as_tokenizer_tokenize(ref, texts[i], len, AS_TOK_PARSE_SPECIAL, &b, &nb, &err), AS_OK, "%s",
                     err.msg);
        cr_assert(na == nb && !memcmp(a, b, na * sizeof *a), "'%s': the directory's ids differ", texts[i]);
        if (i == 0) /* "▁the" is a token: with a prefix, it would come first */
            cr_assert(na > 0 && a[0] != as_tokenizer_find(dir, "\xE2\x96\x81the"), "'%s' got a space prefix",
                      texts[i]);
        free(a), free(b);
    }
    as_tokenizer_free(dir), as_tokenizer_free(ref);
    as_gguf_close(gd), as_gguf_close(gs);
    unlink(path);
    remove_copy(&t);

    static const struct { const char *from, *to, *want; } bad[] = {
        {"\"type\": \"Replace\"", "\"type\": \"NFKC\"", "normalizer 'NFKC'"},
        {"\"content\": \"\xE2\x96\x81\"\n      }\n    ]", "\"content\": \"_\"\n      }\n    ]", "normalizer 'Replace'"},
        {"\"pre_tokenizer\": null", "\"pre_tokenizer\": {\"type\": \"Whitespace\"}", "pre_tokenizer other than"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        make_copy(&t, "tiny-llama", true);
        edit_tokenizer(&t, &bad[c].from, &bad[c].to, 1);
        refused(&t, "tokenizer.json", bad[c].want, NULL);
        remove_copy(&t);
    }
    /* Prepend alone: spaces stay spaces, which llama.cpp's SPM does not do */
    make_copy(&t, "tiny-llama", true);
    const char *f2[] = {"      {\n        \"type\": \"Replace\",\n        \"pattern\": {\n          \"String\": \" \"\n"
                        "        },\n        \"content\": \"\xE2\x96\x81\"\n      }\n",
                        "\"prepend\": \"\xE2\x96\x81\"\n      },"},
               *t2[] = {"", "\"prepend\": \"\xE2\x96\x81\"\n      }"};
    edit_tokenizer(&t, f2, t2, 2);
    refused(&t, "tokenizer.json", "spaces stay spaces", NULL);
    remove_copy(&t);
}

/* NFC (the tokenizers library's NFC normalizer, Qwen's) equals python3's
 * unicodedata.normalize("NFC") on every string of
 * fixtures/unicode-nfc.json (written by gen_unicode_tables.py --nfc from
 * unicodedata: each primary composite decomposed, every decomposable code
 * point, Hangul jamo, marks out of order, exclusions, random mixes); an
 * invalid byte is kept. */
Test(hf, nfc_equals_unicodedata)
{
    json_t *cases = json_load_file("fixtures/unicode-nfc.json", 0, NULL);
    cr_assert(json_is_array(cases) && json_array_size(cases) > 3000);
    size_t i, changed = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        json_t *in = json_array_get(c, 0), *want = json_array_get(c, 1);
        char *got;
        size_t n;
        as_error err = {{0}};
        cr_assert_eq(as_tokenizer_nfc(json_string_value(in), json_string_length(in), &got, &n, &err), AS_OK, "%s",
                     err.msg);
        cr_assert(n == json_string_length(want) && !memcmp(got, json_string_value(want), n),
                  "case %zu: NFC of '%s' is '%s', unicodedata's '%s'", i, json_string_value(in), got,
                  json_string_value(want));
        changed += strcmp(json_string_value(in), json_string_value(want)) != 0;
        free(got);
    }
    cr_assert_gt(changed, 1000, "only %zu cases change under NFC", changed);
    json_decref(cases);
    char *got;
    size_t n;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_nfc("e\xCC\x81\xFF", 4, &got, &n, &err), AS_OK);
    cr_assert(n == 3 && !memcmp(got, "\xC3\xA9\xFF", 3), "an invalid byte after a composition");
    free(got);
}

/* A byte-level tokenizer.json with an NFC normalizer: text not in NFC
 * gets the ids of its NFC form (as the library gives), and convert keeps
 * it in our key and says llama.cpp will not follow it. */
Test(hf, nfc_normalizer_is_applied_and_convert_says_llama_cpp_does_not)
{
    tmpdir t;
    make_copy(&t, "tiny-gpt2", true);
    const char *from[] = {"\"normalizer\": null"}, *to[] = {"\"normalizer\": {\"type\": \"NFC\"}"};
    edit_tokenizer(&t, from, to, 1);
    as_gguf *gd, *gp;
    as_tokenizer *dir = tokenizer_of(t.path, &gd), *plain = tokenizer_of("fixtures/hf/tiny-gpt2", &gp);
    static const char *const pairs[][2] = {
        {"the cafe\xCC\x81 <|endoftext|>e\xCC\x81", "the caf\xC3\xA9 <|endoftext|>\xC3\xA9"},
        {"\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB x", "\xED\x95\x9C x"}, /* Hangul jamo -> the syllable */
        {"q\xCC\xA3\xCC\x87", "q\xCC\xA3\xCC\x87"},                   /* already NFC: unchanged */
    };
    as_error err = {{0}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        int32_t *a, *b, *c;
        size_t na, nb, nc;
        cr_assert_eq(as_tokenizer_tokenize(dir, pairs[i][0], strlen(pairs[i][0]), AS_TOK_PARSE_SPECIAL, &a, &na,
                                           &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_tokenizer_tokenize(plain, pairs[i][1], strlen(pairs[i][1]), AS_TOK_PARSE_SPECIAL, &b, &nb,
                                           &err), AS_OK, "%s", err.msg);
        cr_assert(na == nb && !memcmp(a, b, na * sizeof *a), "pair %zu: not the ids of the NFC form", i);
        cr_assert_eq(as_tokenizer_tokenize(plain, pairs[i][0], strlen(pairs[i][0]), AS_TOK_PARSE_SPECIAL, &c, &nc,
                                           &err), AS_OK, "%s", err.msg);
        if (i < 2) /* without NFC the ids differ: the test tells */
            cr_assert(na != nc || memcmp(a, c, na * sizeof *a), "pair %zu: NFC changed nothing", i);
        free(a), free(b), free(c);
    }
    as_tokenizer_free(dir), as_tokenizer_free(plain);
    as_gguf_close(gd), as_gguf_close(gp);
    char out[] = "/tmp/attnscope-hf-nfc-XXXXXX.gguf", note[640];
    int fd = mkstemps(out, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(as_hf_to_gguf(t.path, out, note, sizeof note, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(note, "llama.cpp") && strstr(note, "NFC") && strstr(note, "gpt-2"), "note: '%s'", note);
    as_gguf *gc;
    as_tokenizer *conv = tokenizer_of(out, &gc);
    plain = tokenizer_of("fixtures/hf/tiny-gpt2", &gp);
    int32_t *a, *b;
    size_t na, nb;
    cr_assert_eq(as_tokenizer_tokenize(conv, "e\xCC\x81", 3, 0, &a, &na, &err), AS_OK);
    cr_assert_eq(as_tokenizer_tokenize(plain, "\xC3\xA9", 2, 0, &b, &nb, &err), AS_OK);
    cr_assert(na == nb && !memcmp(a, b, na * sizeof *a), "the converted file does not normalise");
    free(a), free(b);
    as_tokenizer_free(conv), as_tokenizer_free(plain);
    as_gguf_close(gc), as_gguf_close(gp);
    unlink(out);
    remove_copy(&t);
}

/* The post-processor's pair template becomes our key
 * tokenizer.attnscope.pair, which as_tokenizer_tokenize_pair follows
 * (held to the library's text_pair by make hf-tokref, BERT's layout and
 * RoBERTa's); by hand here: a second [SEP] between the texts and every
 * type 0 gives [CLS] A [SEP] [SEP] B [SEP], types all 0. A template naming
 * another sequence, a special token without ids, and a key that is no
 * template are refused by name. */
Test(hf, pair_template_is_followed_and_broken_ones_are_refused)
{
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    const char *from[] = {"\"Sequence\": {\n          \"id\": \"B\",\n          \"type_id\": 1",
                          "\"id\": \"[SEP]\",\n          \"type_id\": 1"},
               *to[] = {"\"Sequence\": {\n          \"id\": \"B\",\n          \"type_id\": 0",
                        "\"id\": \"[SEP]\",\n          \"type_id\": 0"};
    edit_tokenizer(&t, from, to, 2);
    const char *f2[] = {"\"pair\": [\n      {\n        \"SpecialToken\": {\n          \"id\": \"[CLS]\",\n"
                        "          \"type_id\": 0\n        }\n      },"},
               *t2[] = {"\"pair\": [\n      {\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": "
                        "{\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}, "
                        "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", "
                        "\"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}], \"unused\": ["
                        "\n      {\n        \"SpecialToken\": {\n          \"id\": \"[CLS]\",\n"
                        "          \"type_id\": 0\n        }\n      },"};
    edit_tokenizer(&t, f2, t2, 1);
    as_gguf *g;
    as_tokenizer *tok = tokenizer_of(t.path, &g);
    int32_t cls = as_tokenizer_find(tok, "[CLS]"), sep = as_tokenizer_find(tok, "[SEP]");
    int32_t *a, *b, *ids, *types;
    size_t na, nb, n, n_a;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_tokenize(tok, "the cat", 7, 0, &a, &na, &err), AS_OK);
    cr_assert_eq(as_tokenizer_tokenize(tok, "sat on", 6, 0, &b, &nb, &err), AS_OK);
    cr_assert_eq(as_tokenizer_tokenize_pair(tok, "the cat", 7, "sat on", 6, 0, &ids, &types, &n, &n_a, &err), AS_OK,
                 "%s", err.msg);
    cr_assert_eq(n, na + nb + 4);
    cr_assert(ids[0] == cls && !memcmp(ids + 1, a, na * sizeof *a) && ids[na + 1] == sep && ids[na + 2] == sep &&
              !memcmp(ids + na + 3, b, nb * sizeof *b) && ids[n - 1] == sep, "not [CLS] A [SEP] [SEP] B [SEP]");
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(types[i], 0, "type %zu is %d", i, types[i]);
    free(a), free(b), free(ids), free(types);
    as_tokenizer_free(tok);
    as_gguf_close(g);
    remove_copy(&t);

    static const struct { const char *from, *to, *want; } bad[] = {
        {"\"id\": \"B\",", "\"id\": \"C\",", "names sequence 'C'"},
        {"\"id\": \"[CLS]\",\n          \"type_id\": 0\n        }\n      },\n      {\n        \"Sequence\"",
         "\"id\": \"[NOPE]\",\n          \"type_id\": 0\n        }\n      },\n      {\n        \"Sequence\"",
         "'[NOPE]' has no ids"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        make_copy(&t, "tiny-bert", true);
        const char *f = bad[c].from; /* edited inside the pair template (the single one comes first) */
        char p[256];
        snprintf(p, sizeof p, "%s/tokenizer.json", t.path);
        FILE *fp = fopen(p, "rb");
        static char buf[1 << 20], out[1 << 20];
        size_t len = fread(buf, 1, sizeof buf - 1, fp);
        fclose(fp);
        buf[len] = 0;
        char *pair = strstr(buf, "\"pair\":"), *at = pair ? strstr(pair, f) : NULL;
        cr_assert(at, "no '%s' in the pair template", f);
        int k = snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, bad[c].to, at + strlen(f));
        write_bytes(&t, "tokenizer.json", out, (size_t)k, NULL, 0);
        refused(&t, "tokenizer.json", bad[c].want, NULL);
        remove_copy(&t);
    }
    as_gguf *g0;
    as_gguf_writer *w = edit_gguf("fixtures/tiny-bert.gguf", NULL, NULL, &g0);
    as_gguf_writer_set_str(w, "tokenizer.attnscope.pair", "2:0 $A:0 3:x");
    char path[] = "/tmp/attnscope-pair-XXXXXX.gguf";
    int fd = mkstemps(path, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g0);
    as_model *m = NULL;
    cr_assert_neq(as_model_load(&m, path, &err), AS_OK);
    cr_assert(strstr(err.msg, "tokenizer.attnscope.pair") && strstr(err.msg, "ID:TYPE"), "message '%s'", err.msg);
    unlink(path);
}

Test(hf, convert_to_an_unwritable_path_is_refused)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 16);
    char msg[512];
    cr_assert_neq(run_cmd(s, "convert fixtures/hf/tiny-gpt2 /nonexistent-attnscope-dir/x.gguf", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "/nonexistent-attnscope-dir/x.gguf"), "%s", msg);
    cr_assert_neq(run_cmd(s, "convert fixtures/tiny-gpt2.gguf out.gguf", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "not a directory"), "%s", msg);
    cr_assert_neq(access("out.gguf", F_OK), 0);
    close_session(s);
}

/* A WordPiece directory's normalizer becomes the library's steps
 * (tokenizer.attnscope.normalizer, what tok_wpm.c runs; its ids held to
 * @lenml/tokenizers on the real bert-base-uncased and all-MiniLM-L6-v2
 * files by make hf-tokref): BertNormalizer's options in the library's
 * order, strip_accents null following lowercase; a Sequence of NFD,
 * Lowercase, StripAccents member by member; max_input_chars_per_word (100
 * when absent). Another normalizer is refused by name. */
Test(hf, wordpiece_normalizer_becomes_the_library_steps)
{
    static const struct {
        const char *to, *steps;
    } cases[] = {
        {"\"clean_text\": true, \"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true",
         "clean cjk strip-mn lower"},
        {"\"clean_text\": true, \"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": false",
         "clean cjk"},
        {"\"clean_text\": false, \"handle_chinese_chars\": false, \"strip_accents\": false, \"lowercase\": true",
         "lower"},
        {"\"clean_text\": true, \"handle_chinese_chars\": true, \"strip_accents\": true, \"lowercase\": false",
         "clean cjk strip-mn"},
    };
    const char *bert = "\"type\": \"BertNormalizer\",\n    \"clean_text\": true,\n    \"handle_chinese_chars\": true,\n"
                       "    \"strip_accents\": null,\n    \"lowercase\": true";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] + 2; i++) {
        tmpdir t;
        make_copy(&t, "tiny-bert", true);
        char to[512];
        const char *steps = "nfd lower strip-marks";
        if (i < sizeof cases / sizeof cases[0]) {
            snprintf(to, sizeof to, "\"type\": \"BertNormalizer\", %s", cases[i].to);
            steps = cases[i].steps;
        } else {
            snprintf(to, sizeof to, "\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFD\"}, {\"type\": "
                     "\"Lowercase\"}, {\"type\": \"%s\"}]", i == sizeof cases / sizeof cases[0] ? "StripAccents"
                                                                                              : "NFKC");
        }
        const char *from[] = {bert}, *tos[] = {to};
        edit_tokenizer(&t, from, tos, 1);
        if (strstr(to, "NFKC")) {
            refused(&t, "tokenizer.json", "normalizer 'NFKC'", NULL);
            remove_copy(&t);
            continue;
        }
        as_gguf *g;
        as_tokenizer *tok = tokenizer_of(t.path, &g);
        const char *s = NULL;
        uint32_t mx = 0;
        as_error err = {{0}};
        cr_assert_eq(as_gguf_get_str(g, "tokenizer.attnscope.normalizer", &s, &err), AS_OK, "%s", err.msg);
        cr_assert_str_eq(s, steps, "case %zu", i);
        cr_assert_eq(as_gguf_get_u32(g, "tokenizer.attnscope.max_word_chars", &mx, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(mx, 100);
        as_tokenizer_free(tok);
        as_gguf_close(g);
        remove_copy(&t);
    }
}

/* ---- checkpoints as the hub ships them (tests/hub holds real files of
 * GPT-2, bert-base-uncased and all-MiniLM-L6-v2; make hub-ref runs them):
 * the same traits here on the fixtures. */

/* tokenizer.json's "model" without its "type" (bert-base-uncased's and
 * GPT-2's files on the hub): inferred as the tokenizers library's untagged
 * deserializer does, the GGUF fixture's ids as with the tagged file; an
 * object that is none of BPE, WordPiece, WordLevel, Unigram is refused by
 * name. */
Test(hf, untagged_tokenizer_model_is_inferred_as_the_library_does)
{
    static const struct {
        const char *name, *tagged;
    } cases[] = {{"tiny-gpt2", "\"model\": {\n    \"type\": \"BPE\",\n"},
                 {"tiny-bert", "\"model\": {\n    \"type\": \"WordPiece\",\n"}};
    for (size_t i = 0; i < 2; i++) {
        tmpdir t;
        make_copy(&t, cases[i].name, true);
        const char *from[] = {cases[i].tagged}, *to[] = {"\"model\": {\n"};
        edit_tokenizer(&t, from, to, 1);
        same_ids_at(cases[i].name, t.path);
        remove_copy(&t);
    }
    /* WordPiece without max_input_chars_per_word is no model the library infers (it needs all four fields) */
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    const char *from[] = {"\"model\": {\n    \"type\": \"WordPiece\",\n", "\"max_input_chars_per_word\": 100,",
                          "\"unk_token\": \"[UNK]\","},
               *to[] = {"\"model\": {\n", "", ""};
    edit_tokenizer(&t, from, to, 2);
    refused(&t, "model type 'WordLevel' is not read", NULL, NULL); /* vocab and unk_token: the library's WordLevel */
    edit_tokenizer(&t, from + 2, to + 2, 1);
    refused(&t, "tokenizer.json: 'model' has no 'type'", "none the tokenizers library infers",
            "WordPiece: vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word");
    remove_copy(&t);
}

/* tiny-bert's 1_Pooling/config.json into a copy (make_copy leaves it out) */
static void copy_pooling(const tmpdir *t)
{
    char d[256];
    snprintf(d, sizeof d, "%s/1_Pooling", t->path);
    cr_assert_eq(mkdir(d, 0700), 0);
    strcat(d, "/config.json");
    copy_file("fixtures/hf/tiny-bert/1_Pooling/config.json", d, -1);
}

/* The model types as the library infers them, on hand-written objects. */
Test(hf, model_type_inference_follows_the_untagged_order)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"type\": \"Unigram\", \"vocab\": {}}", "Unigram"},     /* a type given is taken as it is */
        {"{\"vocab\": {\"a\": 0}, \"merges\": []}", "BPE"},        /* BPE first, even with WordPiece's fields */
        {"{\"vocab\": {\"a\": 0}, \"merges\": [], \"unk_token\": \"a\", \"continuing_subword_prefix\": \"##\", "
         "\"max_input_chars_per_word\": 100}", "BPE"},
        {"{\"vocab\": {\"a\": 0}, \"unk_token\": \"a\", \"continuing_subword_prefix\": \"##\", "
         "\"max_input_chars_per_word\": 100}", "WordPiece"},
        {"{\"vocab\": {\"a\": 0}, \"unk_token\": \"a\"}", "WordLevel"}, /* a subset of WordPiece's fields */
        {"{\"vocab\": [[\"a\", -1.0]], \"unk_id\": 0}", "Unigram"},
        {"{\"vocab\": {\"a\": 0}}", NULL},
        {"{\"type\": 3, \"vocab\": {\"a\": 0}, \"merges\": []}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = json_loads(cases[i].json, 0, NULL);
        cr_assert(j, "%s", cases[i].json);
        const char *got = as_hf_model_type(j);
        cr_assert((!got && !cases[i].want) || (got && cases[i].want && !strcmp(got, cases[i].want)),
                  "%s: %s, want %s", cases[i].json, got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
        json_decref(j);
    }
}

/* Rewrites DIR/model.safetensors' header: each tensor named from[i] is
 * renamed to[i] (to NULL: left as it is), and `extra` (a JSON object of
 * entries whose data_offsets count from the end of the present data,
 * zero bytes appended for them) is added. */
static void rewrite_header(const tmpdir *t, const char *const *from, const char *const *to, size_t n,
                           const char *extra)
{
    char p[256];
    snprintf(p, sizeof p, "%s/model.safetensors", t->path);
    FILE *f = fopen(p, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *raw = malloc(size);
    cr_assert_eq(fread(raw, 1, size, f), size);
    fclose(f);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | raw[i];
    json_t *h = json_loadb((const char *)raw + 8, hl, 0, NULL), *out = json_object();
    cr_assert(h);
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v) {
        const char *name = k;
        for (size_t i = 0; i < n; i++)
            if (!strcmp(k, from[i]) && to[i])
                name = to[i];
        json_object_set(out, name, v);
    }
    size_t data = size - 8 - hl, added = 0;
    json_t *x = extra ? json_loads(extra, 0, NULL) : NULL;
    json_object_foreach(x, k, v) {
        json_t *off = json_object_get(v, "data_offsets");
        json_int_t b = json_integer_value(json_array_get(off, 0)), e = json_integer_value(json_array_get(off, 1));
        json_array_set_new(off, 0, json_integer(b + (json_int_t)data));
        json_array_set_new(off, 1, json_integer(e + (json_int_t)data));
        added = (size_t)e > added ? (size_t)e : added;
        json_object_set(out, k, v);
    }
    char *hs = json_dumps(out, JSON_COMPACT);
    size_t len = strlen(hs), padded = (len + 7) / 8 * 8;
    uint8_t *buf = calloc(1, 8 + padded + data + added);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    memset(buf + 8, ' ', padded);
    memcpy(buf + 8, hs, len);
    memcpy(buf + 8 + padded, raw + 8 + hl, data);
    write_bytes(t, "model.safetensors", buf, 8 + padded + data + added, NULL, 0);
    free(buf), free(hs), free(raw);
    json_decref(h), json_decref(out), json_decref(x);
}

/* bert-base-uncased's LayerNorms as TensorFlow named them (gamma, beta),
 * which transformers renames on load: the directory runs as its GGUF twin
 * at every hook, and the load note says the names were read so. */
Test(hf, legacy_layernorm_names_are_read_as_transformers_renames_them)
{
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    copy_pooling(&t);
    static const char *const from[] = {
        "bert.embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.bias",
        "bert.encoder.layer.0.attention.output.LayerNorm.weight", "bert.encoder.layer.0.output.LayerNorm.bias",
        "bert.encoder.layer.1.output.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias"};
    static const char *const to[] = {
        "bert.embeddings.LayerNorm.gamma", "bert.embeddings.LayerNorm.beta",
        "bert.encoder.layer.0.attention.output.LayerNorm.gamma", "bert.encoder.layer.0.output.LayerNorm.beta",
        "bert.encoder.layer.1.output.LayerNorm.gamma", "cls.predictions.transform.LayerNorm.beta"};
    rewrite_header(&t, from, to, 6, NULL);
    same_as_gguf_at("tiny-bert", t.path);
    as_model *m = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_model_load(&m, t.path, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "6 LayerNorm tensors read under their legacy names as transformers renames them"),
              "%s", m->warnings);
    cr_assert(strstr(m->warnings, "bert.embeddings.LayerNorm.gamma as embeddings.LayerNorm.weight"), "%s",
              m->warnings);
    as_model_free(m);
    remove_copy(&t);
}

/* A missing tensor's refusal names the tensor the file has in its place:
 * the nearest name of the same module. */
Test(hf, missing_tensor_refusal_names_the_one_the_file_has)
{
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    static const char *const from[] = {"bert.encoder.layer.1.output.LayerNorm.weight"};
    static const char *const to[] = {"bert.encoder.layer.1.output.LayerNorm.scale"};
    rewrite_header(&t, from, to, 1, NULL);
    refused(&t, "tensor 'encoder.layer.1.output.LayerNorm.weight' is missing",
            "(the file has bert.encoder.layer.1.output.LayerNorm.scale)", "model.safetensors");
    remove_copy(&t);
    /* nothing of the module left: no guess */
    make_copy(&t, "tiny-gpt2", true);
    static const char *const from2[] = {"ln_f.weight", "ln_f.bias"};
    static const char *const to2[] = {"final_norm.weight", "final_norm.bias"};
    rewrite_header(&t, from2, to2, 2, NULL);
    as_model *m = NULL;
    as_error err = {{0}};
    cr_assert_neq(as_model_load(&m, t.path, &err), AS_OK);
    cr_assert(strstr(err.msg, "tensor 'ln_f.weight' is missing") && !strstr(err.msg, "the file has"), "%s",
              err.msg);
    remove_copy(&t);
}

/* Buffers PyTorch saved with the weights, of any dtype (the int64
 * position_ids of older BERT and sentence-transformers checkpoints, GPT-2's
 * causal-mask bias and masked_bias): skipped, and named once in the load
 * note; the directory still runs as its GGUF twin. A tensor the model needs
 * in a dtype it cannot read is refused by name. */
Test(hf, known_buffers_are_skipped_with_one_note)
{
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    copy_pooling(&t);
    rewrite_header(&t, NULL, NULL, 0,
                   "{\"bert.embeddings.position_ids\": {\"dtype\": \"I64\", \"shape\": [1, 64], "
                   "\"data_offsets\": [0, 512]}}");
    same_as_gguf_at("tiny-bert", t.path);
    as_model *m = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_model_load(&m, t.path, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "skipped bert buffers and heads attnscope does not run: "
                                  "bert.embeddings.position_ids (I64)"), "%s", m->warnings);
    as_model_free(m);
    remove_copy(&t);

    make_copy(&t, "tiny-gpt2", true);
    rewrite_header(&t, NULL, NULL, 0,
                   "{\"h.0.attn.bias\": {\"dtype\": \"F32\", \"shape\": [1, 1, 4, 4], \"data_offsets\": [0, 64]},"
                   " \"h.1.attn.bias\": {\"dtype\": \"F32\", \"shape\": [1, 1, 4, 4], \"data_offsets\": [64, 128]},"
                   " \"h.0.attn.masked_bias\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [128, 132]},"
                   " \"h.1.attn.masked_bias\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [132, 136]}}");
    same_as_gguf_at("tiny-gpt2", t.path);
    cr_assert_eq(as_model_load(&m, t.path, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "h.N.attn.bias (2x), h.N.attn.masked_bias (2x)"), "%s", m->warnings);
    as_model_free(m);
    remove_copy(&t);

    /* an int64 tensor where a weight is needed */
    make_copy(&t, "tiny-gpt2", true);
    static const char *const from[] = {"wpe.weight"};
    static const char *const to[] = {"wpe.unused"};
    rewrite_header(&t, from, to, 1,
                   "{\"wpe.weight\": {\"dtype\": \"I64\", \"shape\": [32, 32], \"data_offsets\": [0, 8192]}}");
    refused(&t, "tensor 'wpe.weight': dtype I64 is not read (F32, F16, BF16 are)", NULL, NULL);
    remove_copy(&t);
}

/* sentence-transformers' modules (modules.json: Transformer, Pooling,
 * Normalize) give `embed` the vector sentence-transformers gives: each
 * pooling mode of 1_Pooling and the L2 normalisation, held here to the same
 * reduction computed in the test from the captured last hidden states (the
 * hidden states themselves are held to PyTorch by bert_directory_runs_as_
 * its_gguf; tests/hub holds MiniLM's mean + Normalize to NumPy). A module
 * attnscope does not run, or two pooling modes at once, is refused by name. */
static void pooled_as_reduced(const char *dir, const char *mode, bool l2, const char *says)
{
    as_session *s = open_session(dir, 16);
    run_ok(s, "prompt \"the cat sat on the mat\"; finish");
    int hp = s->prog->pooled, hh = as_program_hook(s->prog, AS_HK_LN2_NORMALIZED, s->model->cfg.n_layer - 1);
    cr_assert(hp >= 0 && hh >= 0);
    int n = s->it->out->n_tokens, d = s->model->cfg.d_model;
    const float *got = as_capture_row(s->cap, hp, n - 1);
    double want[256], norm = 0;
    cr_assert_leq(d, 256);
    for (int j = 0; j < d; j++) {
        double acc = !strcmp(mode, "max") ? -INFINITY : 0;
        for (int i = 0; i < n; i++) {
            double x = as_capture_row(s->cap, hh, i)[j];
            acc = !strcmp(mode, "max") ? fmax(acc, x) : acc + x;
        }
        want[j] = !strcmp(mode, "mean") ? acc / n : !strcmp(mode, "mean_sqrt_len") ? acc / sqrt(n) : acc;
        norm += want[j] * want[j];
    }
    double worst = 0;
    for (int j = 0; j < d; j++)
        worst = fmax(worst, fabs(got[j] - (l2 ? want[j] / sqrt(norm) : want[j])));
    cr_assert_leq(worst, 1e-6, "%s%s: pooled vector off by %.3g", mode, l2 ? " + Normalize" : "", worst);
    char *out = run_output(s, "embed");
    cr_assert(strstr(out, says), "embed says '%.200s', not '%s'", out, says);
    free(out);
    close_session(s);
}

Test(hf, sentence_transformers_modules_give_embed_its_pooling)
{
    static const char *const modules =
        "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
        " {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},"
        " {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}]";
    static const struct {
        const char *key, *mode, *says;
    } cases[] = {{"pooling_mode_mean_tokens", "mean", "pooled vector (mean, L2-normalized over"},
                 {"pooling_mode_max_tokens", "max", "pooled vector (max, L2-normalized over"},
                 {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len", "(sum / sqrt(tokens), L2-normalized over"}};
    tmpdir t;
    make_copy(&t, "tiny-bert", true);
    copy_pooling(&t);
    /* 1_Pooling alone (no modules.json): mean, not normalized, as before */
    pooled_as_reduced(t.path, "mean", false, "pooled vector (mean over");
    write_text(&t, "modules.json", modules);
    for (size_t i = 0; i < 3; i++) {
        char cfg[256];
        snprintf(cfg, sizeof cfg, "{\"word_embedding_dimension\": 32, \"%s\": true}", cases[i].key);
        write_text(&t, "1_Pooling/config.json", cfg);
        pooled_as_reduced(t.path, cases[i].mode, true, cases[i].says);
    }
    /* without Normalize: max, as it is */
    char two[1024];
    snprintf(two, sizeof two, "%.*s]", (int)(strstr(modules, ", {\"idx\": 2") - modules), modules);
    write_text(&t, "modules.json", two);
    write_text(&t, "1_Pooling/config.json", "{\"pooling_mode_max_tokens\": true}");
    pooled_as_reduced(t.path, "max", false, "pooled vector (max over");
    /* refused by name */
    write_text(&t, "1_Pooling/config.json", "{\"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": true}");
    refused(&t, "1_Pooling/config.json: pooling_mode_mean_tokens and pooling_mode_cls_token are both true", NULL,
            NULL);
    write_text(&t, "1_Pooling/config.json", "{\"pooling_mode_weightedmean_tokens\": true}");
    refused(&t, "pooling_mode_weightedmean_tokens is not run", NULL, NULL);
    write_text(&t, "1_Pooling/config.json", "{\"pooling_mode_mean_tokens\": true}");
    write_text(&t, "modules.json",
               "[{\"idx\": 0, \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},"
               " {\"idx\": 1, \"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}]");
    refused(&t, "modules.json: module 1 (sentence_transformers.models.Dense) is not run", NULL, NULL);
    write_text(&t, "modules.json", "{\"not\": \"a list\"}");
    refused(&t, "modules.json: not a JSON array of modules", NULL, NULL);
    remove_copy(&t);
}
