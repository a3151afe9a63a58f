/* Shared by the test files: reading .npy fixtures and opening sessions on
 * the fixture models. Tests run from the tests/ directory. */
#ifndef ATTNSCOPE_TEST_HELPERS_H
#define ATTNSCOPE_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/gguf.h"
#include "attnscope/session.h"
#include "../src/session_internal.h" /* the session's fields, which the tests read */
#include "typed_copy.h"

typedef struct npy {
    float *f;        /* float32 data (int32 arrays converted) */
    int32_t *i;      /* int32 data when the file is <i4 */
    size_t shape[4];
    int ndim;
    size_t count;
} npy;

/* Reads a little-endian float32 or int32 .npy (C order); 0 on success. */
int npy_read(const char *path, npy *out);
void npy_free(npy *a);

/* A session on a model path with stdout/stderr going to /dev/null. */
as_session *open_session(const char *model, size_t capture_mb);
void close_session(as_session *s);
/* Runs commands (';'-separated) and asserts each succeeds. */
void run_ok(as_session *s, const char *cmds);
/* run_ok, returning what the commands printed (malloc'd; free it). */
char *run_output(as_session *s, const char *cmds);
/* Runs one command, returns its status, copies the error message to msg. */
int run_cmd(as_session *s, const char *cmd, char *msg, size_t cap);

/* Reproducible test data: uniform in [-1, 1) from a 64-bit LCG state, and
 * n such values times scale from a seed (malloc'd). */
float rand_unit(uint64_t *state);
float *rand_vector(size_t n, float scale, uint64_t seed);

/* Every test of the vector kernels runs once per instruction set
 * (as_kernels_use): ParameterizedTest(int *isa, suite, name) over
 * KERNEL_ISA_PARAMS, starting with use_kernels(*isa), which says loudly
 * and returns false when this build or CPU has no such kernels. Criterion
 * runs each test in a fresh process (addresses differ): the sets are
 * passed by index into kernel_isas. */
extern const char *const kernel_isas[3];
#define KERNEL_ISA_PARAMS(suite, name)                                          \
    ParameterizedTestParameters(suite, name)                                    \
    {                                                                           \
        static int isas[] = {0, 1, 2};                                          \
        return cr_make_param_array(int, isas, 3);                               \
    }
bool use_kernels(int isa);

/* Runs `cmd ID ID ...` (prompt-ids, source-ids, token-types) with the
 * int32 ids of the .npy at `path`; when `optional`, a missing file is no
 * failure and returns false. */
bool run_npy_ids(as_session *s, const char *cmd, const char *path, bool optional);

/* Broken copies of a fixture, for the tests that a bad file is refused
 * by name: edit_gguf opens `path` (*g, kept open for the tensors' data)
 * and returns a writer holding its keys but `skip_key` and its tensors
 * but `drop` (either NULL: all); set or add keys on it, then
 * load_refused writes it to a temporary file, frees w, closes g, loads
 * the file, asserts that the load failed and gives its message. */
as_gguf_writer *edit_gguf(const char *path, const char *skip_key, const char *drop, as_gguf **g);
void load_refused(as_gguf_writer *w, as_gguf *g, char *msg, size_t cap);

#endif
