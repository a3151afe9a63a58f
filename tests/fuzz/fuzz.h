/* Shared by the fuzz targets: each defines LLVMFuzzerTestOneInput, and is
 * linked either with libFuzzer (clang -fsanitize=fuzzer: `make fuzz`) or
 * with replay.c, a plain main() that feeds it files (`make fuzz-replay`,
 * part of `make test`, so every corpus and regression input is rerun by
 * every build, under the sanitizers in `make asan`).
 *
 * A target aborts (so the fuzzer records a crash) when a property fails;
 * the properties are written next to each target. State a target keeps
 * between inputs (a model read once, a scratch directory) lives here in the
 * test harness, never in src/. */
#ifndef ATTNSCOPE_FUZZ_H
#define ATTNSCOPE_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fixture directory (tests/fixtures): $AS_FIXTURES, else the path the
 * Makefile compiled in. Returns dir + "/" + name in a static buffer. */
const char *fuzz_fixture(const char *name);
/* Reads a whole file (malloc'd) or aborts: fixtures must exist. */
uint8_t *fuzz_read_file(const char *path, size_t *size);
/* A private scratch directory (made once, removed at exit). */
const char *fuzz_scratch_dir(void);
/* Moves the process into it for one input (so commands that write files
 * write there) and back: libFuzzer reads its corpus by relative paths. */
void fuzz_scratch_enter(void);
void fuzz_scratch_leave(void);
/* Removes every entry of the scratch directory except the names listed
 * (NULL-terminated). Returns how many were removed. */
int fuzz_scratch_clean(const char *const *keep);
/* A stream that discards what is written. */
FILE *fuzz_devnull(void);

/* True when text (len bytes) holds no byte a terminal would obey: ASCII
 * controls other than '\n' and '\t', DEL, and C1 controls (U+0080-U+009F
 * in UTF-8, or bare bytes 0x80-0x9F that are not part of a well-formed
 * sequence). A hostile file must not drive the user's terminal through a
 * message or a command's output. *where gets the offset of the first bad byte. */
bool fuzz_terminal_safe(const char *text, size_t len, size_t *where);

#define FUZZ_CHECK(cond, ...)                                                         \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz property failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            abort();                                                                  \
        }                                                                             \
    } while (0)

#endif
