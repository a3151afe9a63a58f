/* A main() for the fuzz targets without libFuzzer: feeds every file named
 * on the command line (directories: every regular file in them, sorted) to
 * LLVMFuzzerTestOneInput once. A failed property aborts, so a non-zero exit
 * means a regression. `make fuzz-replay` runs it over tests/fuzz/corpus and
 * tests/fuzz/regressions for every target. */
#include "fuzz.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_file(const char *path)
{
    size_t n;
    uint8_t *data = fuzz_read_file(path, &n);
    if (getenv("FUZZ_REPLAY_VERBOSE"))
        fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(data, n);
    free(data);
    return 1;
}

static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0; /* a target without regressions has no directory */
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    struct dirent **list;
    int n = scandir(path, &list, NULL, by_name), count = 0;
    for (int i = 0; i < n; i++) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, list[i]->d_name);
        if (list[i]->d_name[0] != '.' && stat(sub, &st) == 0 && S_ISREG(st.st_mode))
            count += run_file(sub);
        free(list[i]);
    }
    free(list);
    return count;
}

int main(int argc, char **argv)
{
    struct timespec t0, t1;
    int count = 0;
    /* Paths are resolved before a target moves into its scratch directory. */
    char **abs = calloc((size_t)argc, sizeof *abs);
    for (int i = 1; i < argc; i++) {
        char *r = realpath(argv[i], NULL);
        abs[i] = r ? r : strdup(argv[i]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 1; i < argc; i++)
        count += run_path(abs[i]);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "%s: replayed %d inputs in %.2f s, no failure\n", argv[0], count,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    for (int i = 1; i < argc; i++)
        free(abs[i]);
    free(abs);
    return 0;
}
