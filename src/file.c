#include "attnscope/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- kinds of files */

as_file_id as_file_id_of(const struct stat *st)
{
    return (as_file_id){(uint64_t)st->st_dev, (uint64_t)st->st_ino};
}

const char *as_file_kind(mode_t mode)
{
    return S_ISREG(mode)    ? "a regular file"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "not a file";
}

/* ---------------------------------------------------------------- reading */

int as_file_open_read(const char *path, struct stat *st, as_error *err)
{
    struct stat own;
    st = st ? st : &own;
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        as_error_set(err, "%s: cannot open: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        as_error_set(err, "%s: cannot read its size: %s", path, strerror(e));
        errno = 0;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        as_error_set(err, "%s: not a regular file (%s)", path, as_file_kind(st->st_mode));
        errno = 0;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

FILE *as_file_fopen_read(const char *path, struct stat *st, as_error *err)
{
    int fd = as_file_open_read(path, st, err);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        as_error_set(err, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        errno = 0;
    }
    return f;
}

static volatile sig_atomic_t *interrupt_flag;

void as_file_set_interrupt(volatile sig_atomic_t *flag)
{
    interrupt_flag = flag;
}

bool as_file_interrupted(void)
{
    return interrupt_flag && *interrupt_flag;
}

int as_file_read_full(int fd, void *buf, size_t n, const char *path, as_error *err)
{
    /* 64 MiB a read: Ctrl-C is answered within one chunk's time. */
    const size_t chunk = (size_t)64 << 20;
    for (size_t got = 0; got < n;) {
        if (as_file_interrupted())
            return as_error_set(err, "%s: interrupted (read %zu of %zu bytes)", path, got, n);
        ssize_t r = read(fd, (char *)buf + got, n - got > chunk ? chunk : n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return as_error_set(err, "%s: read failed at byte %zu of %zu: %s", path, got, n,
                                r < 0 ? strerror(errno) : "the file shrank while being read");
        got += (size_t)r;
    }
    return AS_OK;
}

/* ---------------------------------------------------------------- protected files */

typedef struct held {
    as_file_id id;
    int count;
} held;

static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static held *held_files;
static size_t n_held, cap_held;

static held *find_held(as_file_id id)
{
    for (size_t i = 0; i < n_held; i++)
        if (held_files[i].id.dev == id.dev && held_files[i].id.ino == id.ino)
            return &held_files[i];
    return NULL;
}

void as_file_protect(as_file_id id)
{
    pthread_mutex_lock(&held_lock);
    held *h = find_held(id);
    if (h) {
        h->count++;
    } else {
        if (n_held == cap_held) {
            held *grown = realloc(held_files, (cap_held * 2 + 8) * sizeof *grown);
            if (grown) /* out of memory: this file goes unprotected, the others stay */
                held_files = grown, cap_held = cap_held * 2 + 8;
        }
        if (n_held < cap_held)
            held_files[n_held++] = (held){id, 1};
    }
    pthread_mutex_unlock(&held_lock);
}

void as_file_unprotect(as_file_id id)
{
    pthread_mutex_lock(&held_lock);
    held *h = find_held(id);
    if (h && --h->count == 0)
        *h = held_files[--n_held];
    pthread_mutex_unlock(&held_lock);
}

bool as_file_is_protected(as_file_id id)
{
    pthread_mutex_lock(&held_lock);
    bool yes = find_held(id) != NULL;
    pthread_mutex_unlock(&held_lock);
    return yes;
}

/* ---------------------------------------------------------------- writing */

/* May a file be written at target (path names it in messages, as the
 * user typed it; shown "path -> target" when a link led there)? */
static int check_target(const char *path, const char *target, as_error *err)
{
    struct stat st;
    char where[PATH_MAX * 2 + 8];
    if (strcmp(path, target))
        snprintf(where, sizeof where, "%s -> %s", path, target);
    else
        snprintf(where, sizeof where, "%s", path);
    if (lstat(target, &st) != 0)
        return AS_OK; /* a new name; or a folder that is none, which mkstemp names */
    if (S_ISDIR(st.st_mode))
        return as_error_set(err, "%s: a directory, not a file name: nothing written", where);
    if (!S_ISREG(st.st_mode))
        return as_error_set(err, "%s: %s, not a regular file: nothing written (write to a file name)", where,
                            as_file_kind(st.st_mode));
    if (as_file_is_protected(as_file_id_of(&st)))
        return as_error_set(err, "%s: a model file in use (the loaded model's, or one being read): nothing written "
                            "(write to another name)", where);
    return AS_OK;
}

/* The name to replace: path itself, or the file its symbolic link names
 * (into buf). A dangling link is refused. */
static const char *resolve(const char *path, char *buf, as_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return path;
    if (!realpath(path, buf)) {
        char to[PATH_MAX];
        ssize_t n = readlink(path, to, sizeof to - 1);
        to[n > 0 ? n : 0] = 0;
        as_error_set(err, "%s: a symbolic link to %s, which %s: nothing written (write to the target's name)",
                     path, n > 0 ? to : "?", errno == ENOENT ? "does not exist" : strerror(errno));
        return NULL;
    }
    return buf;
}

/* mkstemp makes the file 0600; an exported figure or array is for
 * sharing (0644), a replaced file keeps its mode. */
static void set_mode(int fd, const char *target)
{
    struct stat st;
    fchmod(fd, stat(target, &st) == 0 && S_ISREG(st.st_mode) ? (st.st_mode & 07777) : 0644);
}

int as_write_atomic(const char *path, int (*write_fn)(void *ctx, void *stream, as_error *err), void *ctx,
                    as_error *err)
{
    char real[PATH_MAX];
    const char *target = resolve(path, real, err);
    if (!target || check_target(path, target, err))
        return AS_ERR;
    size_t n = strlen(target);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return as_error_set(err, "%s: out of memory", path);
    snprintf(tmp, n + 16, "%s.tmp.XXXXXX", target);
    int fd = mkstemp(tmp); /* O_EXCL: never through a link */
    if (fd < 0) {
        int e = errno;
        char *dup = strdup(target);
        as_error_set(err, "%s: cannot write in directory %s: %s", path, dup ? dirname(dup) : "?", strerror(e));
        free(dup);
        free(tmp);
        return AS_ERR;
    }
    set_mode(fd, target);
    FILE *f = fdopen(fd, "wb");
    int rc = f ? write_fn(ctx, f, err) : as_error_set(err, "%s", strerror(errno));
    if (f && fflush(f) && rc == AS_OK)
        rc = as_error_set(err, "%s", strerror(errno));
    if (f && fsync(fileno(f)) && rc == AS_OK)
        rc = as_error_set(err, "%s", strerror(errno));
    if ((f ? fclose(f) : close(fd)) && rc == AS_OK)
        rc = as_error_set(err, "%s", strerror(errno));
    if (rc != AS_OK)
        as_error_prefix(err, "%s", path);
    /* Again just before the rename: the target may have changed meanwhile. */
    else if (check_target(path, target, err))
        rc = AS_ERR;
    else if (rename(tmp, target))
        rc = as_error_set(err, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
    if (rc != AS_OK)
        unlink(tmp);
    free(tmp);
    return rc;
}
