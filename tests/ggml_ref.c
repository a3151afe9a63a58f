/* ggml's quantizers and decoders through dlopen (ggml_ref.h). The
 * declarations below mirror ggml.h of the release the Makefile installs
 * (ggml 0.25.1 in @node-llama-cpp/linux-x64 3.22.1); ggml_ref_open refuses
 * any other version, since its type table's layout and length are ggml's
 * to change. */
#include "ggml_ref.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGML_REF_VERSION "0.25.1"
#define GGML_REF_TYPE_COUNT 43 /* GGML_TYPE_COUNT of that release */
#define GGML_REF_DEFAULT "../build/llama-ref/npm/bins/package/bins/linux-x64/libggml-base.so"

typedef void (*to_float_fn)(const void *x, float *y, int64_t k);
typedef void (*from_float_fn)(const float *x, void *y, int64_t k);

/* struct ggml_type_traits */
typedef struct traits {
    const char *type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    to_float_fn to_float;
    from_float_fn from_float_ref;
} traits;

static struct {
    void *lib;
    const char *(*version)(void);
    const char *(*commit)(void);
    const traits *(*get_type_traits)(int type);
    size_t (*quantize_chunk)(int type, const float *src, void *dst, int64_t start, int64_t nrows,
                             int64_t n_per_row, const float *imatrix);
    void (*quantize_free)(void);
    char version_text[64];
} ggml;

const char *ggml_ref_path(void)
{
    const char *p = getenv("AS_GGML_LIB");
    return p && *p ? p : GGML_REF_DEFAULT;
}

static bool sym(void **out, const char *name, char *why, size_t cap)
{
    *out = dlsym(ggml.lib, name);
    if (!*out)
        snprintf(why, cap, "%s has no symbol %s", ggml_ref_path(), name);
    return *out != NULL;
}

int ggml_ref_open(char *why, size_t cap)
{
    if (ggml.version)
        return GGML_REF_OK;
    if (!ggml.lib)
        ggml.lib = dlopen(ggml_ref_path(), RTLD_NOW | RTLD_LOCAL);
    if (!ggml.lib) {
        /* make llama-ref says in its status file why it could not fetch it */
        char status[200] = "", path[512];
        const char *ref = getenv("AS_LLAMA_REF");
        snprintf(path, sizeof path, "%s/status", ref && *ref ? ref : "../build/llama-ref");
        FILE *f = fopen(path, "r");
        if (!f || !fgets(status, sizeof status, f))
            snprintf(status, sizeof status, "`make llama-ref` fetches it with npm");
        if (f)
            fclose(f);
        status[strcspn(status, "\n")] = '\0';
        snprintf(why, cap, "cannot open ggml's library %s (%s); %s", ggml_ref_path(), dlerror(), status);
        return GGML_REF_MISSING;
    }
    void *v, *c, *t, *q, *f;
    if (!sym(&v, "ggml_version", why, cap) || !sym(&c, "ggml_commit", why, cap) ||
        !sym(&t, "ggml_get_type_traits", why, cap) || !sym(&q, "ggml_quantize_chunk", why, cap) ||
        !sym(&f, "ggml_quantize_free", why, cap))
        return GGML_REF_WRONG;
    /* POSIX: a void * from dlsym converts to a function pointer */
    memcpy(&ggml.version, &v, sizeof v);
    memcpy(&ggml.commit, &c, sizeof c);
    memcpy(&ggml.get_type_traits, &t, sizeof t);
    memcpy(&ggml.quantize_chunk, &q, sizeof q);
    memcpy(&ggml.quantize_free, &f, sizeof f);
    snprintf(ggml.version_text, sizeof ggml.version_text, "%s (%s)", ggml.version(), ggml.commit());
    if (strcmp(ggml.version(), GGML_REF_VERSION) != 0) {
        snprintf(why, cap, "%s is ggml %s; this test mirrors ggml %s's type table", ggml_ref_path(),
                 ggml.version_text, GGML_REF_VERSION);
        ggml.version = NULL;
        return GGML_REF_WRONG;
    }
    return GGML_REF_OK;
}

const char *ggml_ref_version(void) { return ggml.version_text; }

/* ---------------------------------------------------------------- the CPU backend's arithmetic */

/* struct ggml_type_traits_cpu (ggml-cpu.h) */
typedef void (*vec_dot_fn)(int n, float *s, size_t bs, const void *x, size_t bx, const void *y, size_t by, int nrc);
typedef struct traits_cpu {
    from_float_fn from_float;
    vec_dot_fn vec_dot;
    int vec_dot_type;
    int64_t nrows;
} traits_cpu;

static struct {
    void *lib;
    const traits_cpu *(*get)(int type);
    char variant[32];
} cpu;

int ggml_ref_cpu_open(char *why, size_t cap)
{
    if (cpu.get)
        return GGML_REF_OK;
    int rc = ggml_ref_open(why, cap);
    if (rc != GGML_REF_OK)
        return rc;
    /* The variant llama.cpp's loader would choose here among those we can
     * name from the CPU's flags: haswell (AVX2, FMA, F16C, BMI2), else the
     * x86-64 baseline. */
    __builtin_cpu_init();
    bool haswell = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                   __builtin_cpu_supports("bmi2");
    const char *want = getenv("AS_GGML_CPU_VARIANT"); /* another variant on request: x64, sse42, ... */
    snprintf(cpu.variant, sizeof cpu.variant, "%s", want && *want ? want : haswell ? "haswell" : "x64");
    const char *base = ggml_ref_path(), *slash = strrchr(base, '/');
    char path[1024];
    snprintf(path, sizeof path, "%.*slibggml-cpu-%s.so", slash ? (int)(slash - base + 1) : 0, base, cpu.variant);
    cpu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cpu.lib) {
        snprintf(why, cap, "cannot open ggml's CPU library %s (%s)", path, dlerror());
        return GGML_REF_MISSING;
    }
    void *g, *init;
    if (!(g = dlsym(cpu.lib, "ggml_get_type_traits_cpu")) || !(init = dlsym(cpu.lib, "ggml_cpu_init"))) {
        snprintf(why, cap, "%s has no ggml_get_type_traits_cpu or ggml_cpu_init", path);
        return GGML_REF_WRONG;
    }
    void (*init_fn)(void);
    memcpy(&init_fn, &init, sizeof init);
    init_fn(); /* its fp16 tables */
    memcpy(&cpu.get, &g, sizeof g);
    return GGML_REF_OK;
}

const char *ggml_ref_cpu_variant(void) { return cpu.variant; }

int ggml_ref_vec_dot_type(int t)
{
    return cpu.get(t)->vec_dot ? cpu.get(t)->vec_dot_type : -1;
}

void ggml_ref_from_float(int t, const float *x, void *out, int64_t n)
{
    cpu.get(t)->from_float(x, out, n);
}

float ggml_ref_vec_dot(int t, int n, const void *row, const void *act)
{
    float s = 0.0f;
    cpu.get(t)->vec_dot(n, &s, 0, row, 0, act, 0, 1);
    return s;
}

ggml_ref_type ggml_ref_type_of(int t)
{
    ggml_ref_type r = {0};
    if (t < 0 || t >= GGML_REF_TYPE_COUNT)
        return r;
    const traits *tr = ggml.get_type_traits(t);
    /* retired numbers keep a row named "DEPRECATED" or "... REMOVED ..." */
    if (!tr->type_name || strstr(tr->type_name, "DEPRECATED") || strstr(tr->type_name, "REMOVED"))
        return r;
    r.name = tr->type_name;
    r.block_elems = tr->blck_size;
    r.block_bytes = tr->type_size;
    r.can_decode = tr->to_float != NULL;
    return r;
}

size_t ggml_ref_quantize(int t, const float *src, void *dst, int64_t rows, int64_t n_per_row)
{
    return ggml.quantize_chunk(t, src, dst, 0, rows, n_per_row, NULL);
}

void ggml_ref_decode(int t, const void *src, float *out, int64_t n)
{
    ggml.get_type_traits(t)->to_float(src, out, n);
}

void ggml_ref_close(void)
{
    if (ggml.lib && ggml.quantize_free)
        ggml.quantize_free();
}
