/* Files the user names (file.h): as_write_atomic writes onto a new name or
 * a regular file only, and refuses, before writing anything, a FIFO, a
 * directory, a device, a dangling link and a protected file (the loaded
 * model's: a GGUF file, a llama2.c checkpoint is in test_llama2c.c, a
 * Hugging Face directory's files); a link to a regular file replaces the
 * file it names and stays a link. Reads refuse what is not a regular file
 * without blocking. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attnscope/file.h"
#include "attnscope/gguf.h"
#include "attnscope/hf.h"

static int write_hello(void *ctx, void *stream, as_error *err)
{
    (void)ctx, (void)err;
    return fputs("hello\n", stream) < 0 ? AS_ERR : AS_OK;
}

static int write_fails(void *ctx, void *stream, as_error *err)
{
    (void)ctx;
    fputs("half", stream);
    return as_error_set(err, "the writer gave up");
}

static char *make_tmpdir(void)
{
    char *d = strdup("/tmp/attnscope-file-XXXXXX");
    cr_assert(d && mkdtemp(d));
    return d;
}

static void in(char *buf, size_t cap, const char *dir, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot read %s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* No "NAME.tmp.XXXXXX" left in dir (prefix: the file name written). */
static void no_temp_left(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    cr_assert(d);
    char want[300];
    snprintf(want, sizeof want, "%s.tmp.", prefix);
    for (struct dirent *e; (e = readdir(d));)
        cr_assert(strncmp(e->d_name, want, strlen(want)), "temporary file left behind: %s/%s", dir, e->d_name);
    closedir(d);
}

static void rm_rf(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(file, writes_a_new_file_and_replaces_a_regular_one)
{
    char *d = make_tmpdir(), p[300];
    as_error err = {{0}};
    in(p, sizeof p, d, "a.txt");
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(slurp(p), "hello\n");
    put(p, "old\n");
    chmod(p, 0600);
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(slurp(p), "hello\n");
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "a replaced file keeps its mode (got %o)", st.st_mode & 0777);
    no_temp_left(d, "a.txt");
    rm_rf(d);
    free(d);
}

Test(file, a_failed_write_leaves_the_file_and_no_temporary)
{
    char *d = make_tmpdir(), p[300];
    as_error err = {{0}};
    in(p, sizeof p, d, "keep.txt");
    put(p, "precious\n");
    cr_assert_eq(as_write_atomic(p, write_fails, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "keep.txt") && strstr(err.msg, "the writer gave up"), "%s", err.msg);
    cr_assert_str_eq(slurp(p), "precious\n");
    no_temp_left(d, "keep.txt");
    rm_rf(d);
    free(d);
}

Test(file, a_fifo_is_refused_and_stays_a_fifo)
{
    char *d = make_tmpdir(), p[300];
    as_error err = {{0}};
    in(p, sizeof p, d, "pipe.npy");
    cr_assert_eq(mkfifo(p, 0644), 0);
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "pipe.npy: a FIFO, not a regular file: nothing written"), "%s", err.msg);
    struct stat st;
    cr_assert_eq(lstat(p, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
    no_temp_left(d, "pipe.npy");
    rm_rf(d);
    free(d);
}

Test(file, a_directory_is_refused)
{
    char *d = make_tmpdir(), p[300];
    as_error err = {{0}};
    in(p, sizeof p, d, "sub");
    cr_assert_eq(mkdir(p, 0755), 0);
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "sub: a directory, not a file name: nothing written"), "%s", err.msg);
    struct stat st;
    cr_assert(lstat(p, &st) == 0 && S_ISDIR(st.st_mode));
    no_temp_left(d, "sub");
    rm_rf(d);
    free(d);
}

/* /dev/null is refused before any temporary file is made beside it: a
 * device stays a device, and nothing appears in /dev. */
Test(file, a_device_is_refused_and_stays_a_device)
{
    as_error err = {{0}};
    struct stat before, after;
    cr_assert_eq(stat("/dev/null", &before), 0);
    cr_assert(S_ISCHR(before.st_mode), "this machine's /dev/null is not a character device");
    cr_assert_eq(as_write_atomic("/dev/null", write_hello, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "/dev/null: a character device, not a regular file: nothing written"), "%s", err.msg);
    cr_assert_eq(stat("/dev/null", &after), 0);
    cr_assert(S_ISCHR(after.st_mode) && after.st_rdev == before.st_rdev && after.st_ino == before.st_ino);
    no_temp_left("/dev", "null");
}

Test(file, a_link_to_a_regular_file_replaces_the_file_and_stays_a_link)
{
    char *d = make_tmpdir(), target[300], link[300], to[300];
    as_error err = {{0}};
    in(target, sizeof target, d, "real.npy");
    in(link, sizeof link, d, "link.npy");
    put(target, "old\n");
    cr_assert_eq(symlink("real.npy", link), 0);
    cr_assert_eq(as_write_atomic(link, write_hello, NULL, &err), AS_OK, "%s", err.msg);
    struct stat st;
    cr_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced by a file");
    ssize_t n = readlink(link, to, sizeof to - 1);
    cr_assert(n > 0);
    to[n] = 0;
    cr_assert_str_eq(to, "real.npy", "the link names another file now");
    cr_assert_str_eq(slurp(target), "hello\n", "the file the link names was not replaced");
    no_temp_left(d, "real.npy");
    no_temp_left(d, "link.npy");
    rm_rf(d);
    free(d);
}

Test(file, a_link_to_a_fifo_or_nowhere_is_refused)
{
    char *d = make_tmpdir(), fifo[300], link[300], dangling[300];
    as_error err = {{0}};
    in(fifo, sizeof fifo, d, "pipe");
    in(link, sizeof link, d, "to-pipe.npy");
    in(dangling, sizeof dangling, d, "nowhere.npy");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    cr_assert_eq(symlink("pipe", link), 0);
    cr_assert_eq(as_write_atomic(link, write_hello, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "to-pipe.npy -> ") && strstr(err.msg, "pipe: a FIFO, not a regular file"), "%s",
              err.msg);
    cr_assert_eq(symlink("missing/file.npy", dangling), 0);
    cr_assert_eq(as_write_atomic(dangling, write_hello, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "nowhere.npy: a symbolic link to missing/file.npy, which does not exist: nothing "
                              "written"), "%s", err.msg);
    struct stat st;
    cr_assert(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    cr_assert(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    rm_rf(d);
    free(d);
}

Test(file, a_protected_file_is_refused_under_any_name_until_unprotected)
{
    char *d = make_tmpdir(), p[300], hard[300], sym[300];
    as_error err = {{0}};
    in(p, sizeof p, d, "model.gguf");
    in(hard, sizeof hard, d, "same.npy");
    in(sym, sizeof sym, d, "link.npy");
    put(p, "weights\n");
    cr_assert_eq(link(p, hard), 0);
    cr_assert_eq(symlink("model.gguf", sym), 0);
    struct stat st;
    cr_assert_eq(stat(p, &st), 0);
    as_file_id id = as_file_id_of(&st);
    as_file_protect(id);
    as_file_protect(id); /* counted: twice protected, twice unprotected */
    const char *names[] = {p, hard, sym};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(as_write_atomic(names[i], write_hello, NULL, &err), AS_ERR, "%s was written", names[i]);
        cr_assert(strstr(err.msg, "a model file in use (the loaded model's, or one being read): nothing written"), "%s",
                  err.msg);
    }
    cr_assert_str_eq(slurp(p), "weights\n");
    as_file_unprotect(id);
    cr_assert(as_file_is_protected(id));
    as_file_unprotect(id);
    cr_assert(!as_file_is_protected(id));
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_OK, "%s", err.msg);
    no_temp_left(d, "model.gguf");
    rm_rf(d);
    free(d);
}

Test(file, an_open_gguf_file_is_protected_until_closed)
{
    char *d = make_tmpdir(), p[300], cmd[700];
    as_error err = {{0}};
    in(p, sizeof p, d, "m.gguf");
    snprintf(cmd, sizeof cmd, "cp fixtures/tiny-gpt2.gguf '%s'", p);
    cr_assert_eq(system(cmd), 0);
    as_gguf *g;
    cr_assert_eq(as_gguf_open(&g, p, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "m.gguf: a model file in use"), "%s", err.msg);
    as_gguf_close(g);
    cr_assert_eq(as_write_atomic(p, write_hello, NULL, &err), AS_OK, "%s", err.msg);
    rm_rf(d);
    free(d);
}

Test(file, a_hugging_face_directory_protects_its_files)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_hf_open(&g, "fixtures/hf/tiny-gpt2", &err), AS_OK, "%s", err.msg);
    const char *files[] = {"config.json", "model.safetensors", "tokenizer.json"};
    for (int i = 0; i < 3; i++) {
        char p[300];
        struct stat st;
        in(p, sizeof p, "fixtures/hf/tiny-gpt2", files[i]);
        cr_assert_eq(stat(p, &st), 0);
        cr_assert(as_file_is_protected(as_file_id_of(&st)), "%s is not protected while open", p);
    }
    as_gguf_close(g);
    struct stat st;
    cr_assert_eq(stat("fixtures/hf/tiny-gpt2/config.json", &st), 0);
    cr_assert(!as_file_is_protected(as_file_id_of(&st)));
}

/* A FIFO with no writer would block an open(2) for reading forever. */
Test(file, reads_refuse_what_is_not_a_regular_file_without_blocking, .timeout = 10)
{
    char *d = make_tmpdir(), fifo[300];
    as_error err = {{0}};
    in(fifo, sizeof fifo, d, "pipe");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    struct stat st;
    cr_assert_eq(as_file_open_read(fifo, &st, &err), -1);
    cr_assert(strstr(err.msg, "pipe: not a regular file (a FIFO)"), "%s", err.msg);
    cr_assert_eq(as_file_open_read(d, &st, &err), -1);
    cr_assert(strstr(err.msg, "not a regular file (a directory)"), "%s", err.msg);
    cr_assert_eq(as_file_fopen_read("/dev/zero", NULL, &err), NULL);
    cr_assert(strstr(err.msg, "/dev/zero: not a regular file (a character device)"), "%s", err.msg);
    cr_assert_eq(as_file_open_read("/nonexistent/x", &st, &err), -1);
    cr_assert_eq(errno, ENOENT);
    as_gguf *g;
    cr_assert_eq(as_gguf_open(&g, fifo, &err), AS_ERR);
    cr_assert(strstr(err.msg, "not a regular file (a FIFO)"), "%s", err.msg);
    rm_rf(d);
    free(d);
}

Test(file, a_long_read_stops_at_the_interrupt_flag)
{
    char *d = make_tmpdir(), p[300];
    as_error err = {{0}};
    in(p, sizeof p, d, "big");
    put(p, "0123456789");
    int fd = as_file_open_read(p, NULL, &err);
    cr_assert(fd >= 0, "%s", err.msg);
    char buf[16];
    volatile sig_atomic_t flag = 1;
    as_file_set_interrupt(&flag);
    cr_assert_eq(as_file_read_full(fd, buf, 10, p, &err), AS_ERR);
    cr_assert(strstr(err.msg, "big: interrupted"), "%s", err.msg);
    flag = 0;
    cr_assert_eq(as_file_read_full(fd, buf, 10, p, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(memcmp(buf, "0123456789", 10), 0);
    as_file_set_interrupt(NULL);
    close(fd);
    rm_rf(d);
    free(d);
}
