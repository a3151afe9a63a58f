/* Typed copies of a model file, for tests and the benchmark: the same
 * model with its float32 matrices stored as F16, BF16 or Q8_0, converted
 * by the project's own writer-side conversions (or decoded back to F32). */
#include "typed_copy.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int write_typed_copy(const char *src, const char *dst, as_ggml_type type)
{
    as_gguf *g;
    as_error err = {{0}};
    if (as_gguf_open(&g, src, &err))
        return -1;
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    int rc = 0;
    for (uint64_t i = 0; i < g->n_tensors && rc == 0; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        bool convert = (t->n_dims == 2 || t->n_dims == 3) && (type == AS_GGML_F32 ? t->type != AS_GGML_F32
                                                             : t->type == AS_GGML_F32 && t->ne[0] % 32 == 0);
        if (!convert) {
            rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err) ? -1 : 0;
            continue;
        }
        float *f = malloc(t->n_elements * sizeof *f);
        uint8_t *out = malloc(as_ggml_nbytes(type, t->n_elements));
        rc = f && out && as_tensor_to_f32(t, f, &err) == AS_OK ? 0 : -1;
        if (rc == 0 && type == AS_GGML_F32)
            memcpy(out, f, t->n_elements * sizeof *f);
        for (uint64_t k = 0; rc == 0 && (type == AS_GGML_F16 || type == AS_GGML_BF16) && k < t->n_elements; k++) {
            uint16_t h = type == AS_GGML_F16 ? as_f32_to_f16(f[k]) : as_f32_to_bf16(f[k]);
            memcpy(out + 2 * k, &h, 2);
        }
        if (rc == 0 && type == AS_GGML_Q8_0)
            as_quantize_q8_0(f, t->n_elements, out);
        if (rc == 0)
            rc = as_gguf_writer_add_tensor(w, t->name, type, t->n_dims, t->ne, out, &err) ? -1 : 0;
        free(f);
        free(out);
    }
    if (rc == 0)
        rc = as_gguf_writer_write(w, dst, &err) ? -1 : 0;
    as_gguf_writer_free(w);
    as_gguf_close(g);
    return rc;
}
