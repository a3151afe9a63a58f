#include "helpers.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int npy_read(const char *path, npy *a)
{
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char pre[10];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
        fclose(f);
        return -1;
    }
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    char *hdr = calloc(1, hlen + 1);
    if (fread(hdr, 1, hlen, f) != hlen) {
        free(hdr);
        fclose(f);
        return -1;
    }
    int is_int = strstr(hdr, "'<i4'") != NULL;
    if (!is_int && !strstr(hdr, "'<f4'")) {
        free(hdr);
        fclose(f);
        return -1;
    }
    char *p = strstr(hdr, "'shape': (") + 10;
    a->count = 1;
    while (*p && *p != ')') {
        char *end;
        size_t v = strtoul(p, &end, 10);
        if (end == p)
            break;
        a->shape[a->ndim++] = v;
        a->count *= v;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    free(hdr);
    a->f = malloc(a->count * sizeof(float) + 1);
    if (is_int)
        a->i = malloc(a->count * sizeof(int32_t) + 1);
    size_t got = fread(is_int ? (void *)a->i : (void *)a->f, 4, a->count, f);
    fclose(f);
    if (got != a->count)
        return -1;
    if (is_int)
        for (size_t k = 0; k < a->count; k++)
            a->f[k] = (float)a->i[k];
    return 0;
}

void npy_free(npy *a)
{
    free(a->f);
    free(a->i);
    memset(a, 0, sizeof *a);
}

as_session *open_session(const char *model, size_t capture_mb)
{
    as_session *s;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    cr_assert(null);
    if (as_session_new(&s, model, capture_mb, null, null, &err))
        cr_assert_fail("cannot open %s: %s", model, err.msg);
    return s;
}

void close_session(as_session *s)
{
    FILE *null = s->out;
    as_session_free(s);
    fclose(null);
}

int run_cmd(as_session *s, const char *cmd, char *msg, size_t cap)
{
    as_error err = {{0}};
    int rc = as_session_exec(s, cmd, &err);
    if (msg)
        snprintf(msg, cap, "%s", err.msg);
    return rc;
}

void run_ok(as_session *s, const char *cmds)
{
    int n;
    char **list = as_split_commands(cmds, &n);
    for (int i = 0; i < n; i++) {
        char msg[1024];
        if (run_cmd(s, list[i], msg, sizeof msg))
            cr_assert_fail("command '%s' failed: %s", list[i], msg);
    }
    as_free_commands(list, n);
}

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
        bool convert = t->n_dims == 2 && (type == AS_GGML_F32 ? t->type != AS_GGML_F32
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
