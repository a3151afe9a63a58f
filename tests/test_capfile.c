/* The capture file (capture.c's as_capture_set_file): the hooks' storage
 * in a memory-mapped file holds the same values as in RAM, bit for bit,
 * while the storage grows by doubling (64 -> 128 -> 256 positions), is
 * moved there mid-session and back, and the file is removed when given up.
 * The reference is the same session's capture in RAM (calloc'd storage,
 * the code path every other test holds to PyTorch). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "session_internal.h"

static const char *long_prompt(void)
{
    static char buf[4096];
    buf[0] = 0;
    strcat(buf, "prompt ");
    for (int i = 0; i < 15; i++) /* about 150 tokens on austen-gpt2 */
        strcat(buf, "It is a truth universally acknowledged that a single man ");
    return buf;
}

/* Every stored hook of a and b: the same values (and the same hooks stored). */
static void same_capture(as_session *a, as_session *b)
{
    const as_program *p = a->prog;
    int n = a->it->out->n_done;
    cr_assert_eq(n, b->it->out->n_done);
    cr_assert_gt(n, 128, "the prompt must outgrow two capacities (%d positions)", n);
    int compared = 0;
    for (int h = 0; h < p->n_hooks; h++) {
        cr_assert_eq(as_capture_has(a->cap, h), as_capture_has(b->cap, h), "%s", p->hooks[h].name);
        if (!as_capture_has(a->cap, h))
            continue;
        size_t cnt = as_capture_count(a->cap, h, n);
        float *x = malloc(cnt * sizeof *x), *y = malloc(cnt * sizeof *y);
        cr_assert(x && y);
        as_capture_copy(a->cap, h, n, x);
        as_capture_copy(b->cap, h, n, y);
        cr_assert(!memcmp(x, y, cnt * sizeof *x), "%s differs between RAM and the capture file", p->hooks[h].name);
        free(x);
        free(y);
        compared++;
    }
    cr_assert_gt(compared, 20);
}

Test(capfile, file_backed_storage_equals_ram_through_growth_and_back)
{
    char dir[] = "/tmp/capfileXXXXXX", path[64];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/capture.bin", dir);
    as_session *ram = open_session("../models/austen-gpt2.gguf", 1024);
    as_session *file = open_session("../models/austen-gpt2.gguf", 1024);
    as_error err = {{0}};
    /* a first context in RAM, then moved to the file, then a longer one grown there */
    run_ok(file, "prompt-ids 1 5 7; finish");
    cr_assert_eq(as_session_set_capture_file(file, path, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(as_capture_file_path(file->cap), path);
    run_ok(ram, long_prompt());
    run_ok(ram, "finish; gen 3");
    run_ok(file, long_prompt());
    run_ok(file, "finish; gen 3");
    for (int h = 0; h < file->prog->n_hooks; h++)
        if (as_capture_has(file->cap, h))
            cr_assert(file->cap->in_file[h], "%s is not in the capture file", file->prog->hooks[h].name);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_geq((size_t)st.st_size, as_capture_file_bytes(file->cap));
    cr_assert_gt(as_capture_file_bytes(file->cap), 1u << 20);
    same_capture(ram, file);
    /* a second file while one is in use is refused; off moves everything back and removes the file */
    cr_assert_eq(as_session_set_capture_file(file, path, &err), AS_ERR);
    cr_assert(strstr(err.msg, "already goes to"), "%s", err.msg);
    cr_assert_eq(as_session_set_capture_file(file, NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_null(as_capture_file_path(file->cap));
    cr_assert_neq(stat(path, &st), 0, "the capture file is removed when given up");
    for (int h = 0; h < file->prog->n_hooks; h++)
        cr_assert(!file->cap->in_file[h]);
    same_capture(ram, file);
    close_session(ram);
    close_session(file);
    rmdir(dir);
}

Test(capfile, an_existing_path_is_refused_and_left_alone)
{
    char dir[] = "/tmp/capfileXXXXXX", path[64];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/mine.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("keep me", f);
    fclose(f);
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    as_error err = {{0}};
    cr_assert_eq(as_session_set_capture_file(s, path, &err), AS_ERR);
    cr_assert(strstr(err.msg, "File exists") && strstr(err.msg, path), "%s", err.msg);
    cr_assert_null(as_capture_file_path(s->cap));
    close_session(s);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 7);
    unlink(path);
    rmdir(dir);
}
