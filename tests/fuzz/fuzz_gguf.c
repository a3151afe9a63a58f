/* Fuzz target: the GGUF reader (as_gguf_parse), everything that reads a
 * parsed file without a model (typed getters, array readers, dequantizing
 * every supported tensor, the --info model card) and the tokenizer built
 * from the file's metadata.
 * Properties: no crash, leak or undefined behaviour; a refused file gets a
 * message naming the file; neither a message nor the model card carries a
 * terminal control byte from the file; a tensor the reader accepts lies inside the
 * buffer and its size matches its type and shape. */
#include "fuzz.h"

#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/model.h"
#include "attnscope/tokenizer.h"

#define NAME "fuzz.gguf"

static void read_metadata(const as_gguf *g)
{
    as_error err;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const as_gguf_kv *kv = &g->kvs[i];
        uint64_t u64;
        uint32_t u32;
        float f;
        bool b;
        const char *s;
        as_gguf_get_u64(g, kv->key, &u64, &err);
        as_gguf_get_u32(g, kv->key, &u32, &err);
        as_gguf_get_f32(g, kv->key, &f, &err);
        as_gguf_get_bool(g, kv->key, &b, &err);
        as_gguf_get_str(g, kv->key, &s, &err);
        if (kv->type == AS_GGUF_ARRAY && kv->arr_len) {
            volatile double d = as_gguf_arr_f64(kv, 0) + as_gguf_arr_f64(kv, kv->arr_len - 1);
            volatile int64_t v = as_gguf_arr_i64(kv, kv->arr_len - 1);
            (void)d, (void)v;
        }
    }
}

static void read_tensors(const as_gguf *g, const uint8_t *buf, size_t size)
{
    as_error err;
    size_t budget = (size_t)1 << 20; /* floats dequantized per input: keeps one run short */
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        FUZZ_CHECK(t->data >= buf && t->n_bytes <= size && (size_t)(t->data - buf) <= size - t->n_bytes,
                   "tensor %s at %td, %llu bytes, outside a buffer of %zu", t->name, t->data - buf,
                   (unsigned long long)t->n_bytes, size);
        FUZZ_CHECK(as_ggml_nbytes(t->type, t->n_elements) == t->n_bytes, "tensor %s: size", t->name);
        if (!as_ggml_type_supported(t->type)) {
            float x;
            FUZZ_CHECK(as_tensor_row_f32(t, 0, &x, &err) == AS_ERR, "%s: unsupported type dequantized",
                       t->name);
            continue;
        }
        if (t->ne[0] > budget)
            continue;
        float *row = malloc(t->ne[0] * sizeof *row);
        uint64_t rows = as_tensor_rows(t);
        for (uint64_t r = 0; r < rows && budget >= t->ne[0]; r++, budget -= t->ne[0])
            FUZZ_CHECK(as_tensor_row_f32(t, r, row, &err) == AS_OK, "%s row %llu: %s", t->name,
                       (unsigned long long)r, err.msg);
        FUZZ_CHECK(as_tensor_row_f32(t, rows, row, &err) == AS_ERR, "%s: row past the end accepted",
                   t->name);
        free(row);
        if (t->n_elements <= 4096) {
            float *all = malloc(t->n_elements * sizeof *all);
            FUZZ_CHECK(as_tensor_to_f32(t, all, &err) == AS_OK, "%s: %s", t->name, err.msg);
            free(all);
        }
    }
}

static void read_vocabulary(const as_gguf *g)
{
    as_tokenizer *t;
    as_error err;
    if (as_tokenizer_from_gguf(&t, g, &err) != AS_OK) {
        FUZZ_CHECK(strstr(err.msg, NAME) || strstr(err.msg, "tokenizer"), "message: %s", err.msg);
        return;
    }
    static const char text[] = "Hello, world! \xC3\xA9 <s> \xE2\x96\x81x\n\t 123 'll";
    int32_t *ids;
    size_t n, len;
    char *out;
    if (as_tokenizer_encode(t, text, sizeof text - 1, true, &ids, &n, &err) == AS_OK) {
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < as_tokenizer_vocab_size(t), "id %d", ids[i]);
        if (as_tokenizer_decode(t, ids, n, &out, &len, &err) == AS_OK)
            free(out);
        free(ids);
    }
    size_t v = as_tokenizer_vocab_size(t);
    for (size_t i = 0; i < v && i < 300; i++) {
        char buf[64];
        int32_t id = (int32_t)i;
        as_tokenizer_token_bytes(t, id, buf, sizeof buf);
        FUZZ_CHECK(as_tokenizer_piece(t, id) != NULL, "piece %zu", i);
        FUZZ_CHECK(as_tokenizer_decode(t, &id, 1, &out, &len, &err) == AS_OK, "decode %zu: %s", i, err.msg);
        free(out);
    }
    as_tokenizer_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_gguf *g;
    as_error err;
    memset(&err, 0, sizeof err);
    /* A private copy: the reader must not depend on data past `size`. */
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if (as_gguf_parse(&g, buf, size, NAME, &err) != AS_OK) {
        FUZZ_CHECK(g == NULL, "failure left a result");
        FUZZ_CHECK(strncmp(err.msg, NAME ": ", sizeof NAME + 1) == 0, "message does not name the file: %s",
                   err.msg);
        size_t at;
        FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &at), "control byte in the message at %zu: %s", at,
                   err.msg);
        free(buf);
        return 0;
    }
    read_metadata(g);
    read_tensors(g, buf, size);
    char *info = NULL;
    size_t info_len = 0, at;
    FILE *f = open_memstream(&info, &info_len);
    as_gguf_print_info(g, f);
    as_model_print_check(g, f, NULL);
    fclose(f);
    FUZZ_CHECK(fuzz_terminal_safe(info, info_len, &at), "control byte in the model card at %zu", at);
    free(info);
    read_vocabulary(g);
    as_gguf_close(g);
    free(buf);
    return 0;
}
