/* Reliability: what a broken or hostile model file, an absurd size claim or
 * a long generation does. Models are built in memory by tests/fuzz/
 * tiny_models.c (the same builder writes the fuzz seeds), so each test says
 * exactly what is wrong with its file. Measured figures (RSS) are printed
 * with cr_log_info and recorded in tests/RELIABILITY.md. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "attnscope/instruments.h"
#include "attnscope/model.h"
#include "attnscope/npy.h"
#include "attnscope/session.h"
#include "fuzz/tiny_models.c"
#include "helpers.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* ------------------------------------------------------------------ */
/* helpers */

/* kB of a /proc/self/status field (VmRSS, VmHWM, VmSize) */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* Caps this test process's address space a little above what it uses now,
 * so any allocation sized from a hostile count fails and the message below
 * would not be the one the test expects. Not under ASan, whose shadow
 * memory needs terabytes of address space. */
static void cap_address_space(long extra_mb)
{
    if (UNDER_ASAN)
        return;
    struct rlimit rl;
    long size_kb = status_kb("VmSize");
    cr_assert_gt(size_kb, 0);
    rl.rlim_cur = rl.rlim_max = (rlim_t)(size_kb + extra_mb * 1024) * 1024;
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
}

/* Parses a buffer and builds a model; returns the status, *m on success. */
static int load_buf(const uint8_t *buf, size_t n, const char *name, as_model **m, as_error *err)
{
    as_gguf *g;
    *m = NULL;
    memset(err, 0, sizeof *err);
    if (as_gguf_parse(&g, buf, n, name, err))
        return AS_ERR;
    if (as_model_from_gguf(m, g, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    return AS_OK;
}

typedef struct built {
    uint8_t *buf;
    size_t n;
} built;

static built build(as_gguf_writer *w)
{
    built b;
    cr_assert_not_null(w);
    cr_assert_eq(tiny_serialize(w, &b.buf, &b.n), 0);
    return b;
}

/* Expects the model to be refused with a message holding every needle. */
static void expect_refused(built b, const char *name, const char *const *needles)
{
    as_model *m;
    as_error err;
    cr_assert_eq(load_buf(b.buf, b.n, name, &m, &err), AS_ERR, "%s loaded", name);
    cr_assert_null(m);
    cr_assert(strstr(err.msg, name), "%s: message does not name the file: %s", name, err.msg);
    for (const char *const *p = needles; *p; p++)
        cr_assert(strstr(err.msg, *p), "%s: message lacks '%s': %s", name, *p, err.msg);
    free(b.buf);
}

#define REFUSED(b, name, ...) expect_refused(b, name, (const char *const[]){__VA_ARGS__, NULL})

/* ------------------------------------------------------------------ */
/* resource limits: refused from the header, before anything is sized from
 * the claim */

typedef struct hand {
    uint8_t b[512];
    size_t n;
} hand;

static void h_u32(hand *o, uint32_t v) { tiny_put_u32(o->b + o->n, v), o->n += 4; }
static void h_u64(hand *o, uint64_t v) { tiny_put_u64(o->b + o->n, v), o->n += 8; }
static void h_str(hand *o, const char *s)
{
    h_u64(o, strlen(s));
    memcpy(o->b + o->n, s, strlen(s));
    o->n += strlen(s);
}
static void h_header(hand *o, uint64_t n_tensors, uint64_t n_kv)
{
    o->n = 0;
    h_u32(o, AS_GGUF_MAGIC), h_u32(o, 3), h_u64(o, n_tensors), h_u64(o, n_kv);
}

static void expect_parse_refused(const hand *o, const char *needle)
{
    as_gguf *g;
    as_error err = {{0}};
    cap_address_space(64);
    cr_assert_eq(as_gguf_parse(&g, o->b, o->n, "claim.gguf", &err), AS_ERR);
    cr_assert(strstr(err.msg, "claim.gguf: offset "), "%s", err.msg);
    cr_assert(strstr(err.msg, needle), "message lacks '%s': %s", needle, err.msg);
}

Test(reliability_limits, tensor_of_1e12_elements_refused_at_parse)
{
    hand o;
    h_header(&o, 1, 0);
    h_str(&o, "big"), h_u32(&o, 2), h_u64(&o, 1000000), h_u64(&o, 1000000), h_u32(&o, AS_GGML_F32), h_u64(&o, 0);
    while (o.n % 32)
        o.b[o.n++] = 0;
    o.n += 64;
    expect_parse_refused(&o, "tensor 'big' extends past end of file (needs 4000000000000 bytes");
}

Test(reliability_limits, vocabulary_of_2p32_tokens_refused_at_parse)
{
    hand o;
    h_header(&o, 0, 1);
    h_str(&o, "tokenizer.ggml.tokens"), h_u32(&o, AS_GGUF_ARRAY), h_u32(&o, AS_GGUF_STRING), h_u64(&o, 1ull << 32);
    h_str(&o, "a"), h_str(&o, "b");
    expect_parse_refused(&o, "array of 4294967296 strings cannot fit");
}

Test(reliability_limits, counts_past_the_file_refused_at_parse)
{
    hand o;
    h_header(&o, 1ull << 40, 0);
    expect_parse_refused(&o, "tensor count 1099511627776 cannot fit");
    h_header(&o, 0, UINT64_MAX);
    expect_parse_refused(&o, "metadata count 18446744073709551615 cannot fit");
    h_header(&o, 0, 1);
    h_str(&o, "k"), h_u32(&o, AS_GGUF_ARRAY), h_u32(&o, AS_GGUF_FLOAT64), h_u64(&o, 1ull << 61);
    expect_parse_refused(&o, "array of 2305843009213693952 float64 elements");
}

Test(reliability_limits, context_of_2p31_refused_before_allocation)
{
    tiny_spec g, l;
    tiny_default(&g, false);
    tiny_default(&l, true);
    cap_address_space(64);
    as_gguf_writer *w = tiny_writer(&g);
    as_gguf_writer_set_u32(w, "gpt2.context_length", 0x80000000u);
    REFUSED(build(w), "ctx.gguf", "gpt2.context_length = 2147483648 is out of range (1..16777216)");
    w = tiny_writer(&l);
    as_gguf_writer_set_u64(w, "llama.context_length", 1ull << 31);
    REFUSED(build(w), "ctx.gguf", "llama.context_length = 2147483648 is out of range");
    w = tiny_writer(&l);
    as_gguf_writer_set_u64(w, "llama.context_length", UINT64_MAX);
    REFUSED(build(w), "ctx.gguf", "llama.context_length = 18446744073709551615 is out of range");
}

/* The largest context the loader accepts (2^24) on a llama model, whose
 * context is not tied to any tensor: the session reserves its KV cache and
 * norm statistics for every position, but the memory is committed only as
 * positions are written, so opening it and running a prompt stays small. */
Test(reliability_limits, context_of_2p24_costs_address_space_not_memory, .timeout = 120)
{
    tiny_spec l;
    tiny_default(&l, true);
    as_gguf_writer *w = tiny_writer(&l);
    as_gguf_writer_set_u32(w, "llama.context_length", 1u << 24);
    built b = build(w);
    as_model *m;
    as_session *s;
    as_error err;
    FILE *null = fopen("/dev/null", "w");
    long rss0 = status_kb("VmRSS");
    cr_assert_eq(load_buf(b.buf, b.n, "ctx24.gguf", &m, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_session_from_model(&s, m, 1, null, null, &err), AS_OK, "%s", err.msg);
    run_ok(s, "prompt-ids 1 5 6; finish; gen 4");
    long rss1 = status_kb("VmRSS");
    cr_log_info("context 2^24 llama (d_model 8, 1 layer): VmSize %ld MB, RSS growth %ld MB, capture %zu MB in use",
                status_kb("VmSize") / 1024, (rss1 - rss0) / 1024, s->cap->used >> 20);
    if (!UNDER_ASAN)
        cr_assert_lt(rss1 - rss0, 64 * 1024, "RSS grew by %ld kB", rss1 - rss0);
    as_session_free(s);
    fclose(null);
    free(b.buf);
}

/* ------------------------------------------------------------------ */
/* semantic checks: hyperparameters against tensors */

Test(reliability_semantic, hyperparameters_contradicting_tensors_are_refused)
{
    tiny_spec g, l, s;
    tiny_default(&g, false);
    tiny_default(&l, true);
    as_gguf_writer *w;

    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.attention.head_count", 3);
    REFUSED(build(w), "heads.gguf", "embedding_length 8 is not a multiple of head_count 3");
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 3);
    REFUSED(build(w), "kvheads.gguf", "head_count 2 is not a multiple of head_count_kv 3");
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 2);
    REFUSED(build(w), "kv.gguf", "tensor 'blk.0.attn_k.weight' has shape [8, 4, 1, 1] but the configuration needs [8, 8]",
            "head_count_kv 2 x head size 4", "embedding_length 8 / head_count 2");
    s = l, s.rope_dim = 0;
    w = tiny_writer(&s), as_gguf_writer_set_u32(w, "llama.attention.head_count", 4);
    REFUSED(build(w), "heads4.gguf", "needs [8, 2]", "head_count_kv 1 x head size 2", "embedding_length 8 / head_count 4");
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.rope.dimension_count", 3);
    REFUSED(build(w), "rope.gguf", "llama.rope.dimension_count = 3 must be even and at most the head size 4",
            "embedding_length 8 / head_count 2");
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.rope.dimension_count", 16);
    REFUSED(build(w), "rope16.gguf", "dimension_count = 16 must be even and at most the head size 4");
    w = tiny_writer(&l), as_gguf_writer_set_f32(w, "llama.rope.freq_base", -1.0f);
    REFUSED(build(w), "base.gguf", "llama.rope.freq_base = -1 must be a finite number above 1");
    w = tiny_writer(&l), as_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", NAN);
    REFUSED(build(w), "eps.gguf", "layer_norm_rms_epsilon = nan must be a finite number from 0 to 1");
    w = tiny_writer(&g), as_gguf_writer_set_f32(w, "gpt2.attention.layer_norm_epsilon", -1.0f);
    REFUSED(build(w), "eps2.gguf", "layer_norm_epsilon = -1 must be");
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.embedding_length", 16);
    REFUSED(build(w), "width.gguf", "tensor 'token_embd.weight' has shape [8, 33, 1, 1] but the configuration needs [16, 33]");
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.context_length", 16);
    REFUSED(build(w), "ctx16.gguf", "tensor 'position_embd.weight' has shape [8, 8, 1, 1] but the configuration needs [8, 16]");
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.feed_forward_length", 32);
    REFUSED(build(w), "ffn.gguf", "tensor 'blk.0.ffn_up.weight' has shape [8, 16, 1, 1] but the configuration needs [8, 32]");
    s = g, s.n_layer = 2, s.tensor_layers = 1;
    REFUSED(build(tiny_writer(&s)), "missing.gguf", "tensor 'blk.1.attn_norm.weight' is missing");
    s = g, s.n_layer = 1, s.tensor_layers = 2;
    REFUSED(build(tiny_writer(&s)), "extra.gguf", "gpt2.block_count is 1 but the file has tensors for block 1");
    s = l, s.n_layer = 2, s.tensor_layers = 4;
    REFUSED(build(tiny_writer(&s)), "extra4.gguf", "llama.block_count is 2 but the file has tensors for block 2");
    s = g, s.wtype = AS_GGML_I8;
    REFUSED(build(tiny_writer(&s)), "i8.gguf", "has type I8, which attnscope cannot read yet");
}

Test(reliability_semantic, vocabulary_against_token_embd)
{
    tiny_spec g;
    tiny_default(&g, false);
    const char *toks[34];
    char one[34][2];
    int32_t types[34];
    for (int i = 0; i < 34; i++)
        one[i][0] = (char)('a' + i % 26), one[i][1] = '\0', toks[i] = one[i], types[i] = 1;
    as_gguf_writer *w = tiny_writer(&g);
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 34);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, types, 34);
    REFUSED(build(w), "vocab.gguf", "token_embd.weight has 33 rows but the vocabulary has 34 tokens");
}

/* NaN or Inf in the weights: the model loads (so it can be inspected), the
 * load warning names the tensor, and the pass names the first hook. */
static void poisoned(bool llama, const char *tensor, float value, const char *first_hook, const char *where)
{
    tiny_spec sp;
    tiny_default(&sp, llama);
    sp.poison_tensor = tensor;
    sp.poison_value = value;
    built b = build(tiny_writer(&sp));
    as_model *m;
    as_session *s;
    as_error err;
    cr_assert_eq(load_buf(b.buf, b.n, "poison.gguf", &m, &err), AS_OK, "%s", err.msg);
    char want[128];
    snprintf(want, sizeof want, "tensors holding NaN or Inf: %s (1)", tensor);
    cr_assert(strstr(m->warnings, want), "warnings: %s", m->warnings);
    char *warn_text = NULL;
    size_t warn_len = 0;
    FILE *warn = open_memstream(&warn_text, &warn_len);
    FILE *null = fopen("/dev/null", "w");
    cr_assert_eq(as_session_from_model(&s, m, 4, null, warn, &err), AS_OK, "%s", err.msg);
    run_ok(s, "prompt-ids 1 2 3; finish");
    fflush(warn);
    cr_assert(s->it->nonfinite.found);
    cr_assert_str_eq(s->prog->hooks[s->it->nonfinite.hook].name, first_hook);
    snprintf(want, sizeof want, "first non-finite value in this pass: %s [%s]", first_hook, where);
    cr_assert(strstr(warn_text, want), "warning stream: %s", warn_text);
    /* `top` ranks nothing and says where the pass first went wrong. */
    cr_assert_eq(as_session_exec(s, "top 3", &err), AS_ERR, "top succeeded on non-finite logits");
    snprintf(want, sizeof want, "first non-finite value of the pass is %s [%s]", first_hook, where);
    cr_assert(strstr(err.msg, want), "top's error: %s", err.msg);
    as_session_free(s);
    fclose(warn);
    fclose(null);
    free(warn_text);
    free(b.buf);
}

Test(reliability_semantic, nan_weight_named_at_load_and_first_hook_in_the_pass)
{
    /* element 3 of W_qkv is row 0 (q's output 0), column 3 */
    poisoned(false, "blk.0.attn_qkv.weight", NAN, "blocks.0.attn.hook_q", "position 0, head 0, dim 0");
}

Test(reliability_semantic, inf_weight_named_at_load_and_first_hook_in_the_pass)
{
    /* element 3 of W_up is row 0 (the up projection's output 0) */
    poisoned(true, "blk.0.ffn_up.weight", INFINITY, "blocks.0.mlp.hook_pre_linear", "position 0, index 0");
}

/* A quantized tensor's block with a NaN or Inf scale: the model loads, and
 * the load warning names the tensor, the first such block and where it
 * is, and counts its values. `weights` counts the blocks too. */
Test(reliability_semantic, corrupt_block_scale_named_at_load)
{
    tiny_spec sp;
    tiny_default(&sp, false);
    sp.d_model = 32, sp.d_ff = 64, sp.wtype = AS_GGML_Q8_0;
    built b = build(tiny_writer(&sp));
    as_gguf *g;
    as_error err;
    cr_assert_eq(as_gguf_parse(&g, b.buf, b.n, "scale.gguf", &err), AS_OK, "%s", err.msg);
    const as_gguf_tensor *t = as_gguf_tensor_find(g, "blk.0.attn_qkv.weight");
    cr_assert(t && t->type == AS_GGML_Q8_0 && t->ne[0] == 32);
    size_t at = (size_t)(t->data - b.buf);
    as_gguf_close(g);
    /* rows of one 34-byte block each: block 3 gets a NaN scale, block 70 (row 70) -Inf */
    b.buf[at + 3 * 34] = 0x00, b.buf[at + 3 * 34 + 1] = 0x7e;
    b.buf[at + 70 * 34] = 0x00, b.buf[at + 70 * 34 + 1] = 0xfc;
    as_model *m;
    cr_assert_eq(load_buf(b.buf, b.n, "scale.gguf", &m, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "tensors holding NaN or Inf: blk.0.attn_qkv.weight (64; 2 Q8_0 blocks with a "
                                  "NaN or Inf scale, the first block 3: row 3, columns 0..31, scale nan)"),
              "warnings: %s", m->warnings);
    as_weight_stats st;
    cr_assert_eq(as_weight_stats_of(as_gguf_tensor_find(m->gguf, "blk.0.attn_qkv.weight"), &st, &err), AS_OK);
    cr_assert_eq(st.nan + st.inf, 64, "nan %llu + inf %llu", (unsigned long long)st.nan,
                 (unsigned long long)st.inf); /* Inf*q: +-Inf, or NaN where q = 0 */
    cr_assert(st.scales.blocks == 96 && st.scales.bad == 2 && st.scales.first_bad == 3 && st.scales.zero == 0);
    as_session *s;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len), *null = fopen("/dev/null", "w");
    cr_assert_eq(as_session_from_model(&s, m, 4, out, null, &err), AS_OK, "%s", err.msg);
    run_ok(s, "weights blk.0.attn_qkv.weight");
    fflush(out);
    /* the extra columns: 96 blocks, none with d = 0, 2 of 96 bad, the first block 3 */
    cr_assert(strstr(text, "\tzeros\tblocks\tzero_scale\tbad_scale\tmax_scale\tfirst_bad\n"), "%s", text);
    cr_assert(strstr(text, "\t96\t0\t0.02083\t"), "%s", text);
    cr_assert(strstr(text, "\t3\nhistogram"), "%s", text);
    cr_assert(strstr(text, "scales of 96 Q8_0 blocks: 0 zero, 2 NaN or Inf, largest |d| "), "%s", text);
    cr_assert(strstr(text, "first corrupt block: 3 (row 3, columns 0..31), scale nan\n"), "%s", text);
    as_session_free(s);
    fclose(out), fclose(null);
    free(text);
    free(b.buf);
}

/* F16 and BF16 matrices are scanned from their stored bits: a NaN and an
 * Inf are counted as the decoded values would be. */
Test(reliability_semantic, nonfinite_16bit_weights_named_at_load)
{
    const as_ggml_type types[] = {AS_GGML_F16, AS_GGML_BF16};
    const float values[] = {NAN, -INFINITY};
    for (int i = 0; i < 2; i++) {
        tiny_spec sp;
        tiny_default(&sp, i == 1);
        sp.wtype = types[i];
        sp.poison_tensor = "blk.0.ffn_up.weight";
        sp.poison_value = values[i];
        built b = build(tiny_writer(&sp));
        as_model *m;
        as_error err;
        cr_assert_eq(load_buf(b.buf, b.n, "half.gguf", &m, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_gguf_tensor_find(m->gguf, "blk.0.ffn_up.weight")->type, types[i]);
        cr_assert(strstr(m->warnings, "tensors holding NaN or Inf: blk.0.ffn_up.weight (1)"), "%s: %s",
                  as_ggml_type_name(types[i]), m->warnings);
        as_model_free(m);
        free(b.buf);
    }
}

/* A type attnscope lists but cannot decode is refused by its name when the
 * model is loaded to run. */
Test(reliability_semantic, undecodable_type_refused_by_name)
{
    tiny_spec sp;
    tiny_default(&sp, true);
    sp.d_model = 256, sp.d_ff = 512, sp.n_head = 4, sp.n_head_kv = 4, sp.wtype = AS_GGML_IQ2_XXS;
    REFUSED(build(tiny_writer(&sp)), "iq2.gguf", "tensor 'token_embd.weight' has type IQ2_XXS, which attnscope cannot read yet (supported: F32, F16, BF16, Q4_0");
}

/* Empty and duplicated vocabulary strings: the model loads with a warning
 * that counts them, text encodes and decodes, and the empty token decodes
 * to nothing. */
Test(reliability_semantic, vocabulary_with_empty_and_duplicate_tokens)
{
    tiny_spec g;
    tiny_default(&g, false);
    const char *toks[33];
    char one[33][2];
    for (int i = 0; i < 33; i++)
        one[i][0] = (char)('a' + i % 26), one[i][1] = '\0', toks[i] = one[i];
    toks[3] = "", toks[7] = "", toks[32] = "<|endoftext|>";
    as_gguf_writer *w = tiny_writer(&g);
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 33);
    built b = build(w);
    as_model *m;
    as_session *s;
    as_error err;
    cr_assert_eq(load_buf(b.buf, b.n, "dups.gguf", &m, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "vocabulary: 2 empty tokens (first id 3)"), "%s", m->warnings);
    cr_assert(strstr(m->warnings, "vocabulary: 5 tokens repeat an earlier token's text (first id 26"), "%s",
              m->warnings);
    cr_assert_eq(as_tokenizer_find(m->tok, "a"), 0, "a look-up gives the first id");
    int32_t id = 3, *ids;
    size_t n, len;
    char *text;
    cr_assert_eq(as_tokenizer_decode(m->tok, &id, 1, &text, &len, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(len, 0);
    free(text);
    cr_assert_eq(as_tokenizer_encode(m->tok, "abcab", 5, false, &ids, &n, &err), AS_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        cr_assert(ids[i] != 3 && ids[i] != 7 && ids[i] < 26, "id %d", ids[i]);
    free(ids);
    FILE *null = fopen("/dev/null", "w");
    cr_assert_eq(as_session_from_model(&s, m, 4, null, null, &err), AS_OK, "%s", err.msg);
    run_ok(s, "prompt-ids 3 7 26 0; finish; top 3; tokens; gen 2");
    as_session_free(s);
    fclose(null);
    free(b.buf);
}

/* Names and strings from the file end up in messages, warnings and command
 * output; a hostile file must not drive the terminal through them (found
 * by fuzz_model's terminal-safety property). */
static bool has_control(const char *s)
{
    for (const unsigned char *u = (const unsigned char *)s; *u; u++)
        if ((*u < 0x20 && *u != '\n' && *u != '\t') || *u == 0x7f || (*u == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f))
            return true;
    return false;
}

Test(reliability_semantic, strings_from_the_file_reach_the_terminal_escaped)
{
    tiny_spec g;
    tiny_default(&g, false);
    as_model *m;
    as_session *s;
    as_error err;
    as_gguf_writer *w = tiny_writer(&g);
    as_gguf_writer_set_str(w, "general.architecture", "gpt2\x1b[2J\x1b]0;t\x07");
    built b = build(w);
    cr_assert_eq(load_buf(b.buf, b.n, "esc.gguf", &m, &err), AS_ERR);
    cr_assert(!has_control(err.msg) && strstr(err.msg, "architecture 'gpt2?[2J?]0;t?' is not supported"), "%s",
              err.msg);
    free(b.buf);
    w = tiny_writer(&g);
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "\xc2\x9b" "31m\xff");
    b = build(w);
    cr_assert_eq(load_buf(b.buf, b.n, "esc.gguf", &m, &err), AS_ERR);
    cr_assert(!has_control(err.msg) && strstr(err.msg, "tokenizer '??31m?'"), "%s", err.msg);
    free(b.buf);

    float bad[4] = {1.0f, NAN, 2.0f, INFINITY};
    uint64_t ne[1] = {4};
    w = tiny_writer(&g);
    cr_assert_eq(as_gguf_writer_add_tensor(w, "evil\x1b[2J", AS_GGML_F32, 1, ne, bad, &err), AS_OK);
    b = build(w);
    cr_assert_eq(load_buf(b.buf, b.n, "esc.gguf", &m, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "evil?[2J (2)") && !has_control(m->warnings), "%s", m->warnings);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    cr_assert_eq(as_session_from_model(&s, m, 4, out, out, &err), AS_OK, "%s", err.msg);
    run_ok(s, "weights; weights evil*; info");
    as_session_free(s);
    fclose(out);
    cr_assert(strstr(text, "evil\\x1B[2J\tF32"), "weights escapes the name");
    /* found by fuzz_model: a generated token's text held U+0091 (C2 91), a C1
     * control that as_format_piece passed through as valid UTF-8 */
    char shown[64];
    as_format_piece("a\xc2\x91\xc2\x9b[2J\xc2\xa0" "b", 11, shown, sizeof shown);
    cr_assert_str_eq(shown, "a\\xC2\\x91\\xC2\\x9B[2J\xc2\xa0" "b", "%s", shown);
    cr_assert(!has_control(text), "control byte in the output");
    free(text);
    free(b.buf);
}

/* ------------------------------------------------------------------ */
/* the .npy writer (regressions found by fuzz_npy) */

Test(reliability_npy, invalid_shapes_and_dtypes_are_refused_before_writing)
{
    char dir[] = "/tmp/attnscope-npy-XXXXXX", path[64], header[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/x.npy", dir);
    float four[4] = {0};
    size_t shape[2] = {(size_t)1 << 62, 16}, ok[1] = {4};
    as_error err = {{0}};
    /* found by fuzz_npy: a header was written for an unknown dtype and a negative ndim */
    cr_assert_eq(as_npy_header(header, sizeof header, (as_npy_dtype)7, ok, 1), 0);
    cr_assert_eq(as_npy_header(header, sizeof header, AS_NPY_F32, ok, -1), 0);
    cr_assert_eq(as_npy_write(path, (as_npy_dtype)7, four, ok, 1, &err), AS_ERR);
    cr_assert(strstr(err.msg, path), "%s", err.msg);
    cr_assert_eq(as_npy_write(path, AS_NPY_F32, four, ok, -2, &err), AS_ERR);
    /* a size that wraps: refused before the 4-float buffer is read */
    cr_assert_eq(as_npy_write(path, AS_NPY_F32, four, shape, 2, &err), AS_ERR);
    cr_assert(strstr(err.msg, "too large"), "%s", err.msg);
    cr_assert_eq(access(path, F_OK), -1, "nothing was written");
    cr_assert_eq(as_npy_write(path, AS_NPY_F32, four, ok, 1, &err), AS_OK, "%s", err.msg);
    unlink(path);
    cr_assert_eq(rmdir(dir), 0, "no temporary file left in %s", dir);
}

/* ------------------------------------------------------------------ */
/* the capture budget under long generation, measured */

static long gen_to_end_rss(size_t capture_mb, size_t *used, int *n_tokens)
{
    long rss0 = status_kb("VmRSS");
    as_session *s = open_session("../models/austen-gpt2.gguf", capture_mb);
    long rss_loaded = status_kb("VmRSS");
    run_ok(s, "set seed 1; set temp 1; prompt-ids 0");
    for (int i = 0; i < 1000 && s->it->out->n_tokens < s->it->n_ctx; i++)
        run_ok(s, "gen 1000"); /* again after an end-of-sequence token */
    long rss1 = status_kb("VmRSS");
    *used = s->cap->used;
    *n_tokens = s->it->out->n_tokens;
    cr_assert_eq(s->it->out->n_tokens, s->it->n_ctx, "generated to the context end");
    cr_log_info("capture %zu MB: %zu MB allocated (%s); RSS %ld MB after load, +%ld MB after %d tokens",
                capture_mb, *used >> 20, s->cap->dropped[0] ? s->cap->dropped : "nothing dropped",
                (rss_loaded - rss0) / 1024, (rss1 - rss_loaded) / 1024, *n_tokens);
    close_session(s);
    return rss1 - rss_loaded;
}

Test(reliability_capture, budget_holds_when_generating_to_the_context_end, .timeout = 300)
{
    if (access("../models/austen-gpt2.gguf", R_OK) != 0)
        cr_skip_test("models/austen-gpt2.gguf is not there");
    size_t used_small, used_large;
    int n;
    long small = gen_to_end_rss(1, &used_small, &n);
    long large = gen_to_end_rss(1024, &used_large, &n);
    /* the budget bounds what is allocated, and what is resident follows it */
    cr_assert_lt(used_small, used_large);
    if (!UNDER_ASAN) {
        long slack_kb = 16 * 1024; /* working buffers of one pass, allocator rounding */
        cr_assert_lt(small, (long)(used_small >> 10) + slack_kb, "small budget: RSS +%ld kB, %zu kB allocated",
                     small, used_small >> 10);
        cr_assert_lt(large, (long)(used_large >> 10) + slack_kb, "large budget: RSS +%ld kB", large);
        cr_assert_gt(large, small + (long)((used_large - used_small) >> 10) / 2,
                     "a full capture is resident: +%ld kB vs +%ld kB", large, small);
    }
}

/* The same on a model whose full capture is large: a llama of width 32,
 * 2 layers, 4 heads and a context of 1024, generated from one token to
 * the context end (1023 passes). Attention patterns and scores alone are
 * 2 x 2 x 4 x 1024 x 1025 / 2 floats = 33.6 MB. */
static long long_context_rss(size_t capture_mb, size_t *used)
{
    tiny_spec l;
    tiny_default(&l, true);
    l.d_model = 32, l.n_head = 4, l.n_head_kv = 2, l.d_ff = 64, l.n_layer = 2, l.n_ctx = 1024, l.rope_dim = 8;
    built b = build(tiny_writer(&l));
    as_model *m;
    as_session *s;
    as_error err;
    FILE *null = fopen("/dev/null", "w");
    cr_assert_eq(load_buf(b.buf, b.n, "long.gguf", &m, &err), AS_OK, "%s", err.msg);
    long rss0 = status_kb("VmRSS");
    cr_assert_eq(as_session_from_model(&s, m, capture_mb, null, null, &err), AS_OK, "%s", err.msg);
    /* the budget's drops with the patterns stored (auto would compute them
     * on demand once the budget drops anything: ondemand.sh's memory check) */
    run_ok(s, "set patterns stored; set seed 3; set temp 1; prompt-ids 1");
    for (int i = 0; i < 2000 && s->it->out->n_tokens < s->it->n_ctx; i++)
        run_ok(s, "gen 1024");
    cr_assert_eq(s->it->out->n_tokens, 1024);
    long rss1 = status_kb("VmRSS");
    *used = s->cap->used;
    cr_log_info("context 1024, capture %zu MB: %zu kB allocated (%s); RSS +%ld kB after 1024 tokens", capture_mb,
                *used >> 10, s->cap->dropped[0] ? s->cap->dropped : "nothing dropped", rss1 - rss0);
    as_session_free(s);
    fclose(null);
    free(b.buf);
    return rss1 - rss0;
}

Test(reliability_capture, budget_holds_over_a_long_context, .timeout = 600)
{
    size_t used_small, used_mid, used_large;
    long small = long_context_rss(4, &used_small);
    long mid = long_context_rss(20, &used_mid); /* patterns (16.8 MB) kept, the rest dropped */
    long large = long_context_rss(1024, &used_large);
    cr_assert_leq(used_small, (size_t)4 << 20, "the budget bounds what is allocated beyond the KV cache");
    cr_assert_leq(used_mid, (size_t)21 << 20);
    cr_assert_gt(used_mid, (size_t)16 << 20);
    cr_assert_gt(used_large, (size_t)32 << 20);
    if (!UNDER_ASAN) {
        long slack_kb = 16 * 1024;
        cr_assert_lt(small, (long)(used_small >> 10) + slack_kb, "small budget: RSS +%ld kB", small);
        cr_assert_lt(mid, (long)(used_mid >> 10) + slack_kb, "20 MB budget: RSS +%ld kB", mid);
        cr_assert_gt(large, (long)(used_large >> 10) / 2, "a full capture is resident: +%ld kB", large);
    }
}

/* ------------------------------------------------------------------ */
/* a well-formed file with the wrong tensors: named one by one */

/* tiny-qwen3 rewritten without the tensors in `drop` and with an extra
 * one; returns the parsed copy (its bytes in *buf). */
static as_gguf *qwen3_variant(const char *const *drop, uint8_t **buf)
{
    as_gguf *g, *out;
    as_error err;
    cr_assert_eq(as_gguf_open(&g, "fixtures/tiny-qwen3.gguf", &err), AS_OK);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        bool skip = false;
        for (const char *const *d = drop; *d; d++)
            skip |= !strcmp(*d, t->name);
        if (!skip)
            cr_assert_eq(as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err), AS_OK);
    }
    float extra[32] = {0};
    uint64_t ne[1] = {32};
    cr_assert_eq(as_gguf_writer_add_tensor(w, "blk.0.attn_sinks.weight", AS_GGML_F32, 1, ne, extra, &err), AS_OK);
    size_t size;
    cr_assert_eq(as_gguf_writer_to_memory(w, buf, &size, &err), AS_OK);
    as_gguf_writer_free(w);
    as_gguf_close(g);
    cr_assert_eq(as_gguf_parse(&out, *buf, size, "wrong.gguf", &err), AS_OK, "%s", err.msg);
    return out;
}

static char *model_check(as_gguf *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    as_model_print_check(g, f, NULL);
    fclose(f);
    return text;
}

Test(reliability_semantic, a_tensor_not_used_is_a_load_warning_and_info_lists_it)
{
    uint8_t *buf;
    as_gguf *g = qwen3_variant((const char *const[]){NULL}, &buf);
    char *text = model_check(g);
    cr_assert(strstr(text, "warning: 1 tensor the qwen3 architecture does not use: blk.0.attn_sinks.weight"), "%s",
              text);
    free(text);
    as_model *m;
    as_error err;
    cr_assert_eq(as_model_from_gguf(&m, g, &err), AS_OK, "%s", err.msg);
    cr_assert(strstr(m->warnings, "1 tensor the qwen3 architecture does not use: blk.0.attn_sinks.weight"), "%s",
              m->warnings);
    as_model_free(m);
    free(buf);
}

Test(reliability_semantic, every_missing_tensor_is_named_by_info_and_the_first_stops_the_load)
{
    uint8_t *buf;
    as_gguf *g = qwen3_variant((const char *const[]){"blk.0.attn_k_norm.weight", "blk.1.ffn_down.weight", NULL}, &buf);
    char *text = model_check(g);
    cr_assert(strstr(text, "MISSING OR WRONG  wrong.gguf: tensor 'blk.0.attn_k_norm.weight' is missing"), "%s", text);
    cr_assert(strstr(text, "MISSING OR WRONG  wrong.gguf: tensor 'blk.1.ffn_down.weight' is missing"), "%s", text);
    cr_assert(strstr(text, "blk.0.attn_sinks.weight") && strstr(text, "cannot run"), "%s", text);
    free(text);
    as_model *m;
    as_error err;
    cr_assert_neq(as_model_from_gguf(&m, g, &err), AS_OK);
    cr_assert(strstr(err.msg, "tensor 'blk.0.attn_k_norm.weight' is missing (a qwen3 model needs it)"), "%s", err.msg);
    as_gguf_close(g);
    free(buf);
}

/* Ctrl-C during a long command: it stops with "interrupted", never with a
 * message about something else (a patch sweep said "no logits: run the
 * pass first"), and the session goes on: the pass read next is computed
 * again under the rules in effect. The flag is raised before the command,
 * as a Ctrl-C in its first moment would. */
Test(reliability_interrupt, long_commands_stop_with_interrupted)
{
    static volatile sig_atomic_t flag;
    as_session *s = open_session("../models/austen-gpt2.gguf", 64);
    s->interrupt = &flag;
    s->it->interrupt = &flag;
    run_ok(s, "prompt When Mary and John went to the store, John gave a drink to; finish; metric \" Mary\" \" John\"");
    char dir[] = "/tmp/as-interrupt-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char dump_all[128];
    snprintf(dump_all, sizeof dump_all, "dump all %s", dir);
    const char *cmds[] = {
        "patch sweep resid_pre from \"When Mary and John went to the store, Mary gave a drink to\"",
        "patch blocks.1.hook_resid_pre from \"When Mary and John went to the store, Mary gave a drink to\"",
        "heads", "weights", dump_all, "compare", "gen 5",
        /* a load stops too, and the session keeps its model */
        "load ../models/austen-llama.gguf", "load fixtures/hf/tiny-gpt2",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        as_error err = {{0}};
        flag = 1;
        int rc = as_session_exec(s, cmds[i], &err);
        flag = 0;
        cr_assert_eq(rc, AS_ERR, "%s: not stopped", cmds[i]);
        cr_assert(strstr(err.msg, "interrupted") != NULL, "%s: '%s'", cmds[i], err.msg);
        run_ok(s, "unablate");
    }
    /* the session goes on, and reads what a fresh pass computes */
    char *after = run_output(s, "finish; top 3");
    char *cut = strstr(after, "next token after");
    cr_assert_not_null(cut);
    memmove(after, cut, strlen(cut) + 1);
    as_session *fresh = open_session("../models/austen-gpt2.gguf", 64);
    run_ok(fresh, "prompt When Mary and John went to the store, John gave a drink to; finish");
    char *want = run_output(fresh, "top 3");
    cr_assert_str_eq(after, want);
    free(after);
    free(want);
    close_session(fresh);
    close_session(s);
    char rm[160];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    cr_assert_eq(system(rm), 0);
}
