/* INTERIM shim (lead) until the typed kernels land: F32 only. */
#include "attnscope/weight.h"

#include <string.h>

bool as_weight_type_readable(as_ggml_type t) { return t == AS_GGML_F32; }

as_weight as_weight_f32(const float *data, int rows, int cols)
{
    return (as_weight){data, AS_GGML_F32, rows, cols, (size_t)cols * sizeof(float)};
}

as_weight as_weight_rows(const as_weight *w, int r0, int n)
{
    as_weight s = *w;
    s.data = (const char *)w->data + (size_t)r0 * w->row_bytes;
    s.rows = n;
    return s;
}

int as_weight_from_tensor(as_weight *w, const as_gguf_tensor *t, as_error *err)
{
    if (!as_weight_type_readable(t->type))
        return as_error_set(err, "%s: tensor '%s' has type %s, which attnscope cannot read yet", t->path ? t->path : "",
                            t->name, as_ggml_type_name(t->type));
    *w = as_weight_f32((const float *)t->data, (int)(t->n_elements / t->ne[0]), (int)t->ne[0]);
    return AS_OK;
}

size_t as_weight_bytes(const as_weight *w) { return (size_t)w->rows * w->row_bytes; }

void as_weight_row(const as_weight *w, int r, float *out)
{
    memcpy(out, (const char *)w->data + (size_t)r * w->row_bytes, (size_t)w->cols * sizeof(float));
}
