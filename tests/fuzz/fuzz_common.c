/* Helpers shared by the fuzz targets (see fuzz.h). */
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AS_FIXTURE_DIR
#define AS_FIXTURE_DIR "tests/fixtures"
#endif

const char *fuzz_fixture(const char *name)
{
    static char path[4096];
    const char *dir = getenv("AS_FIXTURES");
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : AS_FIXTURE_DIR, name);
    return path;
}

uint8_t *fuzz_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz: cannot open %s (set AS_FIXTURES to tests/fixtures)\n", path);
        abort();
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || n < 0 || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "fuzz: cannot read %s\n", path);
        abort();
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static char scratch[64];

static void remove_scratch(void)
{
    if (!scratch[0])
        return;
    fuzz_scratch_clean(NULL);
    rmdir(scratch);
}

static int saved_cwd = -1;

void fuzz_scratch_enter(void)
{
    saved_cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (saved_cwd < 0 || chdir(fuzz_scratch_dir()) != 0) {
        perror("fuzz: entering the scratch directory");
        abort();
    }
}

void fuzz_scratch_leave(void)
{
    if (saved_cwd < 0 || fchdir(saved_cwd) != 0) {
        perror("fuzz: leaving the scratch directory");
        abort();
    }
    close(saved_cwd);
    saved_cwd = -1;
}

const char *fuzz_scratch_dir(void)
{
    if (scratch[0])
        return scratch;
    /* tmpfs when there is one: writes are fsync'ed, and a disk makes that slow */
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
                           ? "/dev/shm" : "/tmp";
    snprintf(scratch, sizeof scratch, "%s/attnscope-fuzz-XXXXXX", base);
    if (!mkdtemp(scratch)) {
        perror("fuzz: scratch directory");
        abort();
    }
    atexit(remove_scratch);
    return scratch;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path) == 0 ? 0 : 0; /* keep going: one stubborn entry must not stop the rest */
}

int fuzz_scratch_clean(const char *const *keep)
{
    DIR *d = opendir(fuzz_scratch_dir());
    int removed = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        int kept = 0;
        for (const char *const *k = keep; k && *k; k++)
            kept |= !strcmp(*k, e->d_name);
        if (kept)
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", scratch, e->d_name);
        /* directories too (`dump all DIR`), depth first */
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        removed++;
    }
    closedir(d);
    return removed;
}

FILE *fuzz_devnull(void)
{
    static FILE *f;
    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}

bool fuzz_terminal_safe(const char *text, size_t len, size_t *where)
{
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t k = 1;
        bool bad = (u[i] < 0x20 && u[i] != '\n' && u[i] != '\t') || u[i] == 0x7f;
        if (u[i] >= 0x80) { /* a well-formed sequence other than C1, or a bare byte of 0xa0 and up */
            k = u[i] >= 0xc2 && u[i] <= 0xdf ? 2 : u[i] >= 0xe0 && u[i] <= 0xef ? 3 : u[i] >= 0xf0 && u[i] <= 0xf4 ? 4 : 0;
            for (size_t j = 1; j < k; j++)
                if (i + j >= len || (u[i + j] & 0xc0) != 0x80)
                    k = 0;
            bad = (k == 0 && u[i] <= 0x9f) || (k == 2 && u[i] == 0xc2 && u[i + 1] <= 0x9f);
            k = k ? k : 1;
        }
        if (bad) {
            if (where)
                *where = i;
            return false;
        }
        i += k;
    }
    return true;
}
