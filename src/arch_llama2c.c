/* llama2.c checkpoints and tokenizers (see llama2c.h for the layouts): the
 * llama architecture in another container. A checkpoint is shown as a GGUF
 * view with llama.cpp's names for arch "llama", so this file, like
 * arch_llama.c, names that architecture's tensors; nothing else does. */
#include "attnscope/llama2c.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/file.h"
#include "tensor_names.h"

#define MAX_DIM (1 << 24)

/* The float32 arrays after the header, in file order. */
enum {
    A_EMB, A_RMS_ATT, A_WQ, A_WK, A_WV, A_WO, A_RMS_FFN, A_W1, A_W2, A_W3,
    A_RMS_FINAL, A_FREQ_RE, A_FREQ_IM, A_WCLS, A_COUNT
};

static const char *const array_name[A_COUNT] = {
    "token_embedding", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3",
    "rms_final", "freq_cis_real", "freq_cis_imag", "wcls",
};

typedef struct l2c_config {
    int32_t dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len;
    bool shared;            /* vocab_size was positive: wcls is token_embedding */
    uint64_t start[A_COUNT];/* file offset of each array */
    uint64_t count[A_COUNT];/* floats in each array (all layers) */
} l2c_config;

/* The tokenizer file's vocabulary, converted to GGUF's conventions. */
typedef struct l2c_vocab {
    char **pieces;
    uint64_t *lens;
    float *scores;
    int32_t *types;
    size_t n;
} l2c_vocab;

/* ---------------------------------------------------------------- files */

/* A file read into anonymous memory (munmap(*map - *lead, *size + *lead)
 * frees it), placed so that byte data_at lands 64-byte aligned. The
 * checkpoint's floats start 28 bytes into the file, so a mapping of it
 * leaves every weight row misaligned for the vector loads of the
 * matrix-vector kernel (measured: decode 10-15% slower than on the same
 * weights from a GGUF file, whose data are 32-byte aligned); the resident
 * size is the same as a mapping's once every weight is read. The
 * tokenizer, read whole once, comes through here too (data_at 0). */
static int read_aligned(const char *path, size_t data_at, const uint8_t **map, size_t *size, size_t *lead,
                        struct stat *st, as_error *err)
{
    int fd = as_file_open_read(path, st, err); /* a FIFO or a device is refused, never waited on */
    if (fd < 0)
        return AS_ERR;
    if (st->st_size <= 0) {
        close(fd);
        return as_error_set(err, "%s: an empty file", path);
    }
    size_t n = (size_t)st->st_size, pad = (64 - data_at % 64) % 64;
    uint8_t *m = mmap(NULL, n + pad, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        int e = errno;
        close(fd);
        return as_error_set(err, "%s: cannot allocate %zu bytes for the checkpoint: %s", path, n, strerror(e));
    }
    int rc = as_file_read_full(fd, m + pad, n, path, err); /* Ctrl-C stops it */
    close(fd);
    if (rc) {
        munmap(m, n + pad);
        return AS_ERR;
    }
    mprotect(m, n + pad, PROT_READ);
    *map = m + pad;
    *size = n;
    *lead = pad;
    return AS_OK;
}

static int32_t rd_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---------------------------------------------------------------- checkpoint layout */

static int check_header(l2c_config *c, const char *path, const uint8_t *map, size_t size, as_error *err)
{
    static const char *const field[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                         "n_kv_heads", "vocab_size", "seq_len"};
    int32_t *dst[7] = {&c->dim, &c->hidden, &c->n_layers, &c->n_heads, &c->n_kv_heads, &c->vocab, &c->seq_len};
    if (size < AS_L2C_HEADER_BYTES)
        return as_error_set(err, "%s: %zu bytes, too short for llama2.c's %d-byte header", path, size,
                            AS_L2C_HEADER_BYTES);
    for (int i = 0; i < 7; i++) {
        int32_t v = rd_i32(map + 4 * i);
        int32_t mag = i == 5 && v < 0 && v != INT32_MIN ? -v : v;
        if (mag <= 0 || mag > MAX_DIM)
            return as_error_set(err, "%s: offset %d: header field %s = %d is out of range (1..%d%s)", path,
                                4 * i, field[i], v, MAX_DIM, i == 5 ? ", negative when not shared" : "");
        *dst[i] = mag;
    }
    c->shared = rd_i32(map + 20) > 0;
    if (c->dim % c->n_heads || (c->dim / c->n_heads) % 2)
        return as_error_set(err, "%s: offset 0: dim %d must be n_heads (%d) times an even head size", path,
                            c->dim, c->n_heads);
    if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads)
        return as_error_set(err, "%s: offset 16: n_kv_heads %d must divide n_heads %d", path,
                            c->n_kv_heads, c->n_heads);
    return AS_OK;
}

/* Float counts of every array; false on overflow (absurd headers). */
static bool array_counts(l2c_config *c)
{
    uint64_t d = (uint64_t)c->dim, f = (uint64_t)c->hidden, L = (uint64_t)c->n_layers;
    uint64_t hs = d / (uint64_t)c->n_heads, kv = (uint64_t)c->n_kv_heads * hs, V = (uint64_t)c->vocab;
    uint64_t per_layer[A_COUNT] = {0, d, d * d, kv * d, kv * d, d * d, d, f * d, d * f, f * d};
    bool bad = false;
    for (int a = A_RMS_ATT; a <= A_W3; a++)
        bad |= __builtin_mul_overflow(per_layer[a], L, &c->count[a]);
    c->count[A_EMB] = V * d;
    c->count[A_RMS_FINAL] = d;
    c->count[A_FREQ_RE] = c->count[A_FREQ_IM] = (uint64_t)c->seq_len * (hs / 2);
    c->count[A_WCLS] = c->shared ? 0 : V * d;
    return !bad;
}

/* Places the arrays one after another and checks each against the file. */
static int place_arrays(l2c_config *c, const char *path, size_t size, as_error *err)
{
    if (!array_counts(c))
        return as_error_set(err, "%s: offset 0: the header's sizes overflow", path);
    uint64_t off = AS_L2C_HEADER_BYTES;
    for (int a = 0; a < A_COUNT; a++) {
        uint64_t bytes = c->count[a] * sizeof(float);
        c->start[a] = off;
        if (c->count[a] > (UINT64_MAX >> 3) || bytes > size - off)
            return as_error_set(err,
                                "%s: offset %llu: %s needs %llu bytes (%llu floats) but the file ends at %zu "
                                "(the header: dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, "
                                "vocab_size %d, seq_len %d)",
                                path, (unsigned long long)off, array_name[a], (unsigned long long)bytes,
                                (unsigned long long)c->count[a], size, c->dim, c->hidden, c->n_layers,
                                c->n_heads, c->n_kv_heads, c->shared ? c->vocab : -c->vocab, c->seq_len);
        off += bytes;
    }
    if (off != size)
        return as_error_set(err, "%s: offset %llu: %llu bytes follow the last array (%s); the header "
                            "describes a %llu-byte file", path, (unsigned long long)off,
                            (unsigned long long)(size - off), c->shared ? "freq_cis_imag" : "wcls",
                            (unsigned long long)off);
    return AS_OK;
}

/* ---------------------------------------------------------------- the GGUF view */

/* The name a GGUF conversion would carry: the file's base name, no extension. */
static void base_name(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    snprintf(out, cap, "%s", b ? b + 1 : path);
    char *dot = strrchr(out, '.');
    if (dot && dot != out)
        *dot = '\0';
}

static bool add_config_kvs(as_gguf *g, const l2c_config *c)
{
    char name[128];
    base_name(g->path, name, sizeof name);
    return as_gguf_view_str(g, "general.architecture", "llama") && as_gguf_view_str(g, "general.name", name) &&
           as_gguf_view_u32(g, "general.file_type", 0) && /* llama.cpp's LLAMA_FTYPE_ALL_F32 */
           as_gguf_view_u32(g, "llama.context_length", (uint32_t)c->seq_len) &&
           as_gguf_view_u32(g, "llama.embedding_length", (uint32_t)c->dim) &&
           as_gguf_view_u32(g, "llama.block_count", (uint32_t)c->n_layers) &&
           as_gguf_view_u32(g, "llama.feed_forward_length", (uint32_t)c->hidden) &&
           as_gguf_view_u32(g, "llama.rope.dimension_count", (uint32_t)(c->dim / c->n_heads)) &&
           as_gguf_view_u32(g, "llama.attention.head_count", (uint32_t)c->n_heads) &&
           as_gguf_view_u32(g, "llama.attention.head_count_kv", (uint32_t)c->n_kv_heads) &&
           as_gguf_view_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f) &&
           as_gguf_view_f32(g, "llama.rope.freq_base", 10000.0f);
}

/* One tensor of the view: layer l's slice of array a, shaped ne0 x ne1 (ne1 0: a vector). */
static bool add_tensor(as_gguf *g, const l2c_config *c, const char *name, int a, int l, uint64_t ne0,
                       uint64_t ne1)
{
    as_gguf_tensor *t = &g->tensors[g->n_tensors];
    uint64_t n = ne0 * (ne1 ? ne1 : 1);
    uint64_t at = c->start[a] + (uint64_t)l * n * sizeof(float);
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name)))
        return false;
    g->n_tensors++;
    t->n_dims = ne1 ? 2 : 1;
    t->ne[0] = ne0, t->ne[1] = ne1 ? ne1 : 1, t->ne[2] = t->ne[3] = 1;
    t->type = AS_GGML_F32;
    t->offset = at - g->data_offset;
    t->info_offset = at;
    t->n_elements = n;
    t->n_bytes = n * sizeof(float);
    t->data = g->map + at;
    t->path = g->path;
    return true;
}

static bool add_layer_tensors(as_gguf *g, const l2c_config *c, int l)
{
    uint64_t d = (uint64_t)c->dim, f = (uint64_t)c->hidden;
    uint64_t kv = (uint64_t)c->n_kv_heads * (d / (uint64_t)c->n_heads);
    static const struct { const char *name; int array; int in, out; } spec[] = {
        /* in/out: 0 = dim, 1 = hidden, 2 = kv_dim, -1 = a vector */
        {AS_TN_ATTN_NORM ".weight", A_RMS_ATT, 0, -1}, {AS_TN_ATTN_Q ".weight", A_WQ, 0, 0},
        {AS_TN_ATTN_K ".weight", A_WK, 0, 2},          {AS_TN_ATTN_V ".weight", A_WV, 0, 2},
        {AS_TN_ATTN_OUT ".weight", A_WO, 0, 0},        {AS_TN_FFN_NORM ".weight", A_RMS_FFN, 0, -1},
        {AS_TN_FFN_GATE ".weight", A_W1, 0, 1},        {AS_TN_FFN_DOWN ".weight", A_W2, 1, 0},
        {AS_TN_FFN_UP ".weight", A_W3, 0, 1},
    };
    uint64_t size[3] = {d, f, kv};
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
        char name[96];
        snprintf(name, sizeof name, spec[i].name, l);
        if (!add_tensor(g, c, name, spec[i].array, l, size[spec[i].in], spec[i].out < 0 ? 0 : size[spec[i].out]))
            return false;
    }
    return true;
}

static bool add_tensors(as_gguf *g, const l2c_config *c)
{
    uint64_t d = (uint64_t)c->dim, V = (uint64_t)c->vocab;
    g->tensors = calloc(3 + 9 * (size_t)c->n_layers, sizeof *g->tensors);
    if (!g->tensors || !add_tensor(g, c, AS_TN_TOKEN_EMBD ".weight", A_EMB, 0, d, V))
        return false;
    for (int l = 0; l < c->n_layers; l++)
        if (!add_layer_tensors(g, c, l))
            return false;
    return add_tensor(g, c, AS_TN_OUTPUT_NORM ".weight", A_RMS_FINAL, 0, d, 0) &&
           (c->shared || add_tensor(g, c, AS_TN_OUTPUT ".weight", A_WCLS, 0, d, V));
}

int as_llama2c_open(as_gguf **out, const char *path, as_error *err)
{
    *out = NULL;
    as_gguf *g = calloc(1, sizeof *g);
    l2c_config c = {0};
    if (!g || !(g->path = strdup(path))) {
        free(g);
        return as_error_set(err, "%s: out of memory", path);
    }
    struct stat st;
    if (read_aligned(path, AS_L2C_HEADER_BYTES, &g->map, &g->size, &g->map_lead, &st, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    g->mapped = true;
    if (as_gguf_hold(g, &st, path, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    g->version = 0; /* not a GGUF file: the model card says so */
    g->alignment = sizeof(float);
    g->data_offset = AS_L2C_HEADER_BYTES;
    if (check_header(&c, path, g->map, g->size, err) || place_arrays(&c, path, g->size, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    if (!add_config_kvs(g, &c) || !add_tensors(g, &c)) {
        as_gguf_close(g);
        return as_error_set(err, "%s: out of memory", path);
    }
    *out = g;
    return AS_OK;
}

/* ---------------------------------------------------------------- tokenizer */

static void vocab_free(l2c_vocab *v)
{
    for (size_t i = 0; v->pieces && i < v->n; i++)
        free(v->pieces[i]);
    free(v->pieces);
    free(v->lens);
    free(v->scores);
    free(v->types);
    memset(v, 0, sizeof *v);
}

/* GGUF's piece for llama2.c's bytes: ' ' becomes '▁'; BOS and EOS (stored
 * as "\n<s>\n" and "\n</s>\n") get their SentencePiece names. */
static char *convert_piece(const uint8_t *s, size_t len, size_t id, uint64_t *out_len)
{
    if (id == 1 || id == 2) {
        char *p = strdup(id == 1 ? "<s>" : "</s>");
        *out_len = p ? strlen(p) : 0;
        return p;
    }
    char *p = malloc(3 * len + 1), *o = p;
    if (!p)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ')
            memcpy(o, "\xe2\x96\x81", 3), o += 3;
        else
            *o++ = (char)s[i];
    }
    *o = '\0';
    *out_len = (uint64_t)(o - p);
    return p;
}

/* GGUF token types: 2 unknown, 3 control, 6 byte, 1 normal. */
static int32_t piece_type(const char *p, uint64_t len, size_t id)
{
    if (id == 0)
        return 2;
    if (id == 1 || id == 2)
        return 3;
    bool byte = len == 6 && !memcmp(p, "<0x", 3) && p[5] == '>';
    return byte ? 6 : 1;
}

static int parse_vocab(l2c_vocab *v, const char *path, const uint8_t *map, size_t size, as_error *err)
{
    if (size < 4 || rd_i32(map) <= 0)
        return as_error_set(err, "%s: offset 0: max_token_length %s", path,
                            size < 4 ? "missing (the file is shorter than 4 bytes)" : "must be positive");
    size_t off = 4;
    for (size_t i = 0; i < v->n; i++) {
        if (size - off < 8)
            return as_error_set(err, "%s: offset %zu: token %zu of %zu: score and length need 8 bytes, "
                                "the file ends at %zu", path, off, i, v->n, size);
        int32_t len = rd_i32(map + off + 4);
        memcpy(&v->scores[i], map + off, sizeof(float));
        if (len < 0 || (size_t)len > size - off - 8)
            return as_error_set(err, "%s: offset %zu: token %zu: length %d does not fit in the file (%zu bytes)",
                                path, off + 4, i, len, size);
        if (!(v->pieces[i] = convert_piece(map + off + 8, (size_t)len, i, &v->lens[i])))
            return as_error_set(err, "%s: out of memory", path);
        v->types[i] = piece_type(v->pieces[i], v->lens[i], i);
        off += 8 + (size_t)len;
    }
    if (off != size)
        return as_error_set(err, "%s: offset %zu: %zu bytes follow token %zu: the tokenizer has more "
                            "tokens than the checkpoint's vocab_size %zu", path, off, size - off, v->n - 1, v->n);
    return AS_OK;
}

/* held: the model whose file it becomes (protected with it), or NULL. */
static int read_vocab(l2c_vocab *v, const char *path, size_t n, as_gguf *held, as_error *err)
{
    const uint8_t *map = NULL;
    size_t size = 0;
    memset(v, 0, sizeof *v);
    v->n = n;
    v->pieces = calloc(n, sizeof *v->pieces);
    v->lens = calloc(n, sizeof *v->lens);
    v->scores = calloc(n, sizeof *v->scores);
    v->types = calloc(n, sizeof *v->types);
    if (!v->pieces || !v->lens || !v->scores || !v->types) {
        vocab_free(v);
        return as_error_set(err, "%s: out of memory", path);
    }
    size_t lead;
    struct stat st;
    if (read_aligned(path, 0, &map, &size, &lead, &st, err)) {
        vocab_free(v);
        return AS_ERR;
    }
    if (held && as_gguf_hold(held, &st, path, err)) {
        munmap((void *)(map - lead), size + lead);
        vocab_free(v);
        return AS_ERR;
    }
    int rc = parse_vocab(v, path, map, size, err);
    munmap((void *)(map - lead), size + lead);
    if (rc)
        vocab_free(v);
    return rc;
}

static int vocab_tokenizer(as_tokenizer **out, const l2c_vocab *v, const char *path, as_error *err)
{
    as_tokenizer_spec sp = {
        .kind = AS_TOK_LLAMA,
        .tokens = (const char *const *)v->pieces,
        .token_lens = v->lens,
        .n_tokens = v->n,
        .scores = v->scores,
        .token_types = v->types,
        .bos_id = v->n > 1 ? 1 : -1,
        .eos_id = v->n > 2 ? 2 : -1,
        .unk_id = 0,
        .add_bos = true,
        .add_space_prefix = true, /* run.c's dummy prefix */
    };
    if (as_tokenizer_new(out, &sp, err))
        return as_error_prefix(err, "%s", path);
    return AS_OK;
}

int as_llama2c_tokenizer(as_tokenizer **out, const char *path, int n_vocab, as_error *err)
{
    l2c_vocab v;
    *out = NULL;
    if (n_vocab <= 0)
        return as_error_set(err, "%s: a vocabulary size is needed (got %d)", path, n_vocab);
    if (read_vocab(&v, path, (size_t)n_vocab, NULL, err))
        return AS_ERR;
    int rc = vocab_tokenizer(out, &v, path, err);
    vocab_free(&v);
    return rc;
}

/* ---------------------------------------------------------------- loading and export */

/* run.c's default is tokenizer.bin in the current directory; beside the
 * checkpoint comes first so a model directory works from anywhere. */
static const char *find_tokenizer(const char *path, char *buf, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int dir = slash ? (int)(slash - path) : 1;
    snprintf(buf, cap, "%.*s/tokenizer.bin", dir, slash ? path : ".");
    if (access(buf, R_OK) == 0)
        return buf;
    return access("tokenizer.bin", R_OK) == 0 ? "tokenizer.bin" : NULL;
}

/* The vocabulary as GGUF metadata; the pieces move into the view. */
static bool add_vocab_kvs(as_gguf *g, l2c_vocab *v)
{
    if (!as_gguf_view_str(g, "tokenizer.ggml.model", "llama") || !as_gguf_view_u32(g, "tokenizer.ggml.bos_token_id", 1) ||
        !as_gguf_view_u32(g, "tokenizer.ggml.eos_token_id", 2) || !as_gguf_view_u32(g, "tokenizer.ggml.unknown_token_id", 0))
        return false;
    as_gguf_kv *kv = as_gguf_view_kv(g, "tokenizer.ggml.tokens", AS_GGUF_ARRAY);
    if (!kv)
        return false;
    kv->arr_type = AS_GGUF_STRING;
    kv->arr_len = v->n;
    kv->strs = v->pieces;
    kv->str_lens = v->lens;
    v->pieces = NULL;
    v->lens = NULL;
    return true;
}

/* Opens a checkpoint and reads its tokenizer; *tok_path is resolved (into buf when searched for). */
static int open_pair(as_gguf **g, l2c_vocab *v, const char *path, const char **tok_path, char *buf,
                     size_t cap, as_error *err)
{
    if (as_llama2c_open(g, path, err))
        return AS_ERR;
    if (!*tok_path && !(*tok_path = find_tokenizer(path, buf, cap))) {
        as_gguf_close(*g);
        return as_error_set(err, "%s: a llama2.c checkpoint needs its tokenizer: no tokenizer.bin beside it "
                            "or in the current directory (give one with --tokenizer FILE)", path);
    }
    if (read_vocab(v, *tok_path, as_gguf_tensor_find(*g, AS_TN_TOKEN_EMBD ".weight")->ne[1], *g, err)) {
        as_gguf_close(*g);
        return AS_ERR;
    }
    return AS_OK;
}

int as_llama2c_load(as_model **out, const char *path, const char *tok_path, as_error *err)
{
    as_gguf *g;
    as_tokenizer *tok = NULL;
    l2c_vocab v;
    char buf[PATH_MAX];
    *out = NULL;
    if (open_pair(&g, &v, path, &tok_path, buf, sizeof buf, err))
        return AS_ERR;
    int rc = vocab_tokenizer(&tok, &v, tok_path, err);
    if (rc == AS_OK && !add_vocab_kvs(g, &v))
        rc = as_error_set(err, "%s: out of memory", path);
    if (rc == AS_OK)
        rc = as_model_from_gguf_tok(out, g, tok, err);
    if (rc) {
        as_tokenizer_free(tok);
        as_gguf_close(g);
    }
    vocab_free(&v);
    return rc;
}

static int write_gguf(const as_gguf *g, const l2c_vocab *v, const char *out, as_error *err)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    if (!w)
        return as_error_set(err, "%s: out of memory", out);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->pieces, v->n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, v->scores, v->n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, v->types, v->n);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    int rc = AS_OK;
    for (uint64_t i = 0; i < g->n_tensors && rc == AS_OK; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, err);
    }
    if (rc == AS_OK)
        rc = as_gguf_writer_write(w, out, err);
    as_gguf_writer_free(w);
    return rc;
}

int as_llama2c_to_gguf(const char *path, const char *tok_path, const char *gguf_path, as_error *err)
{
    as_gguf *g;
    l2c_vocab v;
    char buf[PATH_MAX];
    if (open_pair(&g, &v, path, &tok_path, buf, sizeof buf, err))
        return AS_ERR;
    int rc = write_gguf(g, &v, gguf_path, err);
    vocab_free(&v);
    as_gguf_close(g);
    return rc;
}
