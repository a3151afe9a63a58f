#include "helpers.h"

#include <criterion/criterion.h>

#include "attnscope/kernels.h"
#include "attnscope/model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

char *run_output(as_session *s, const char *cmds)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len), *old = s->out;
    cr_assert(mem);
    s->out = mem;
    run_ok(s, cmds);
    s->out = old;
    fclose(mem);
    return text;
}

float rand_unit(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

float *rand_vector(size_t n, float scale, uint64_t seed)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = rand_unit(&seed) * scale;
    return x;
}

const char *const kernel_isas[3] = {"generic", "avx2", "avx512"};

bool use_kernels(int isa)
{
    if (as_kernels_use(kernel_isas[isa])) {
        cr_assert_str_eq(as_kernels_isa(), kernel_isas[isa], "the kernels in use are not the ones chosen");
        return true;
    }
    /* Loud, but not a Criterion warning: those fail the whole run, and a
     * CPU without AVX-512 is no failure. */
    fprintf(stderr, "**** SKIP: no %s kernels in this build or on this CPU (running %s): NOT CHECKED ****\n",
            kernel_isas[isa], as_kernels_isa());
    return false;
}

as_gguf_writer *edit_gguf(const char *path, const char *skip_key, const char *drop, as_gguf **g)
{
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(g, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < (*g)->n_kv; i++)
        if (!skip_key || strcmp((*g)->kvs[i].key, skip_key))
            as_gguf_writer_copy_kv(w, &(*g)->kvs[i]);
    for (uint64_t i = 0; i < (*g)->n_tensors; i++) {
        const as_gguf_tensor *t = &(*g)->tensors[i];
        if (!drop || strcmp(t->name, drop))
            cr_assert_eq(as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err), AS_OK,
                         "%s", err.msg);
    }
    return w;
}

void load_refused(as_gguf_writer *w, as_gguf *g, char *msg, size_t cap)
{
    as_error err = {{0}};
    char path[] = "/tmp/attnscope-edited-XXXXXX.gguf";
    int fd = mkstemps(path, 5);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);
    as_model *m = NULL;
    int rc = as_model_load(&m, path, &err);
    unlink(path);
    as_model_free(m);
    cr_assert_neq(rc, AS_OK, "the edited file loaded");
    snprintf(msg, cap, "%s", err.msg);
}

bool run_npy_ids(as_session *s, const char *cmd, const char *path, bool optional)
{
    if (optional && access(path, R_OK) != 0)
        return false;
    npy a;
    cr_assert_eq(npy_read(path, &a), 0, "cannot read %s", path);
    size_t cap = strlen(cmd) + 12 * a.count + 1;
    char *line = malloc(cap);
    cr_assert(line);
    size_t o = (size_t)snprintf(line, cap, "%s", cmd);
    for (size_t i = 0; i < a.count; i++)
        o += (size_t)snprintf(line + o, cap - o, " %d", a.i[i]);
    run_ok(s, line);
    free(line);
    npy_free(&a);
    return true;
}
