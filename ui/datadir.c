#include "datadir.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AS_DATADIR
#define AS_DATADIR "/usr/local/share/attnscope"
#endif

#define MAX_DIRS 8

/* The kind's folder in the repository and in the installed data directory. */
static const char *repo_sub(data_kind k)
{
    return k == DATA_MODELS ? "models" : k == DATA_IMAGES ? "assets/fashion" : "assets/lessons";
}

static const char *installed_sub(data_kind k)
{
    return k == DATA_MODELS ? "models" : k == DATA_IMAGES ? "fashion" : "lessons";
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The candidate directories, best first. */
static int candidates(data_kind k, char dirs[MAX_DIRS][PATH_MAX])
{
    int n = 0;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0'; /* PREFIX/bin: PREFIX/share/attnscope */
            if (snprintf(dirs[n], PATH_MAX, "%s/../share/attnscope/%s", exe, installed_sub(k)) < PATH_MAX)
                n++;
        }
        for (int up = 0; up < 3 && (slash = strrchr(exe, '/')) != NULL; up++) {
            /* the repository holding build/attnscope, or ./attnscope */
            if (snprintf(dirs[n], PATH_MAX, "%s/%s", exe, repo_sub(k)) < PATH_MAX)
                n++;
            *slash = '\0';
        }
    }
    snprintf(dirs[n++], PATH_MAX, "%s", repo_sub(k));
    snprintf(dirs[n++], PATH_MAX, "%s/%s", AS_DATADIR, installed_sub(k));
    return n;
}

bool datadir_dir(data_kind kind, char *buf, size_t cap)
{
    char dirs[MAX_DIRS][PATH_MAX];
    int n = candidates(kind, dirs);
    for (int i = 0; i < n; i++)
        if (is_dir(dirs[i]) && snprintf(buf, cap, "%s", dirs[i]) < (int)cap)
            return true;
    return false;
}

bool datadir_find(data_kind kind, const char *name, char *buf, size_t cap)
{
    char dirs[MAX_DIRS][PATH_MAX];
    int n = candidates(kind, dirs);
    for (int i = 0; i < n; i++)
        if (snprintf(buf, cap, "%s/%s", dirs[i], name) < (int)cap && access(buf, R_OK) == 0)
            return true;
    return false;
}

const char *datadir_model(const char *name, char *buf, size_t cap)
{
    char file[NAME_MAX + 1];
    if (access(name, F_OK) == 0 || strchr(name, '/'))
        return name;
    if (datadir_find(DATA_MODELS, name, buf, cap))
        return buf;
    if (snprintf(file, sizeof file, "%s.gguf", name) < (int)sizeof file && datadir_find(DATA_MODELS, file, buf, cap))
        return buf;
    return name; /* not bundled either: the loader says what is wrong with the name */
}
