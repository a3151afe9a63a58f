/* weight: a weight matrix as the model file stores it (weight.h): making
 * and slicing views. Decoding a row and the fused row · x are kernels
 * (kernels.c), beside the float ones they mirror. */
#include "attnscope/weight.h"

#include <stdint.h>
#include <string.h>

#include "attnscope/quant.h"

/* The type table's decoder column decides: a type is readable once quant.c
 * decodes it (and kernels.c reads its rows). */
bool as_weight_type_readable(as_ggml_type t)
{
    return as_ggml_type_supported(t);
}

as_weight as_weight_f32(const float *data, int rows, int cols)
{
    return (as_weight){data, AS_GGML_F32, rows, cols, (size_t)cols * sizeof(float)};
}

as_weight as_weight_rows(const as_weight *w, int r0, int n)
{
    as_weight s = *w;
    /* a tensor a survey (--info) found missing has no data: its slices have none either */
    s.data = w->data ? (const char *)w->data + (size_t)r0 * w->row_bytes : NULL;
    s.rows = n;
    return s;
}

int as_weight_from_tensor(as_weight *w, const as_gguf_tensor *t, as_error *err)
{
    if (!as_weight_type_readable(t->type)) {
        char list[AS_TYPE_LIST_CAP];
        as_ggml_supported_list(list, sizeof list);
        return as_error_set(err, "%s: tensor '%s' has type %s, which attnscope cannot read yet (supported: %s)",
                            t->path ? t->path : "model", t->name, as_ggml_type_name(t->type), list);
    }
    /* F32 rows are read as floats in place: the map must hold them aligned. */
    if (t->type == AS_GGML_F32 && (uintptr_t)t->data % sizeof(float))
        return as_error_set(err, "%s: tensor '%s' is not aligned to 4 bytes in the file",
                            t->path ? t->path : "model", t->name);
    w->data = t->data;
    w->type = t->type;
    w->cols = (int)t->ne[0];
    w->rows = (int)(t->n_elements / t->ne[0]);
    w->row_bytes = (size_t)as_ggml_nbytes(t->type, t->ne[0]);
    return AS_OK;
}

size_t as_weight_bytes(const as_weight *w)
{
    return (size_t)w->rows * w->row_bytes;
}
