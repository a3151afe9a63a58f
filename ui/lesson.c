#include "lesson.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/file.h"
#include "datadir.h"

/* A lesson file larger than this is not one (the bundled ones are a few KB). */
#define LESSON_MAX_BYTES (1 << 20)

static char *trimmed(const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    return strndup(s, len);
}

static int append(char **buf, const char *add)
{
    size_t old = *buf ? strlen(*buf) : 0;
    char *grown = realloc(*buf, old + strlen(add) + 1);
    if (!grown)
        return -1;
    strcpy(grown + old, add);
    *buf = grown;
    return 0;
}

static lesson_step *new_step(lesson *l, int line)
{
    lesson_step *grown = realloc(l->steps, (size_t)(l->n_steps + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    l->steps = grown;
    lesson_step *s = &l->steps[l->n_steps++];
    memset(s, 0, sizeof *s);
    s->line = line;
    return s;
}

/* One line of a step: a command, text, or a blank line ending a paragraph. */
static int step_line(lesson_step *s, char *line, bool *para_open)
{
    if (line[0] == ':') {
        char **grown = realloc(s->cmds, (size_t)(s->n_cmds + 1) * sizeof *grown);
        char *cmd = trimmed(line + 1, strlen(line + 1));
        if (!grown || !cmd) {
            free(cmd);
            return -1;
        }
        s->cmds = grown;
        s->cmds[s->n_cmds++] = cmd;
        return 0;
    }
    if (!line[0]) {
        *para_open = false;
        return 0;
    }
    const char *sep = !s->text ? "" : *para_open ? " " : "\n";
    *para_open = true;
    return append(&s->text, sep) || append(&s->text, line) ? -1 : 0;
}

/* A header line (title:, model:) before the first step's content. */
static bool header(lesson *l, const char *line)
{
    char **field = !strncmp(line, "title:", 6) ? &l->title : !strncmp(line, "model:", 6) ? &l->model : NULL;
    if (!field)
        return false;
    free(*field);
    *field = trimmed(line + 6, strlen(line + 6));
    return true;
}

static int check(const lesson *l, const char *where, as_error *err)
{
    if (!l->title)
        return as_error_set(err, "%s: no `title:` line before the first step", where);
    if (l->n_steps == 0)
        return as_error_set(err, "%s: no steps (a step is `: command` lines and text, steps split by ---)", where);
    for (int i = 0; i < l->n_steps; i++)
        if (!l->steps[i].text)
            return as_error_set(err, "%s:%d: step %d has no text to show", where, l->steps[i].line, i + 1);
    return AS_OK;
}

int lesson_parse(const char *text, const char *where, lesson *out, as_error *err)
{
    memset(out, 0, sizeof *out);
    lesson_step *cur = NULL;
    bool para = false, in_header = true;
    int lineno = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        char *line = trimmed(p, len);
        lineno++;
        p += len + (p[len] == '\n');
        if (!line)
            goto oom;
        int rc = 0;
        if (line[0] == '#') {
            rc = 0;
        } else if (!strcmp(line, "---")) {
            in_header = false;
            para = false;
            cur = new_step(out, lineno + 1);
            rc = cur ? 0 : -1;
        } else if (in_header && header(out, line)) {
            rc = 0;
        } else if (line[0] || cur) {
            in_header = false;
            if (!cur && !(cur = new_step(out, lineno)))
                rc = -1;
            else
                rc = step_line(cur, line, &para);
        }
        free(line);
        if (rc)
            goto oom;
    }
    /* A trailing --- makes an empty step: drop it. */
    if (out->n_steps && !out->steps[out->n_steps - 1].text && !out->steps[out->n_steps - 1].n_cmds)
        out->n_steps--;
    if (check(out, where, err)) {
        lesson_free(out);
        return AS_ERR;
    }
    return AS_OK;
oom:
    lesson_free(out);
    return as_error_set(err, "%s: out of memory", where);
}

static char *read_all(const char *path, as_error *err)
{
    struct stat st;
    FILE *f = as_file_fopen_read(path, &st, err); /* a FIFO or a device is refused, never waited on */
    if (!f)
        return NULL;
    if (st.st_size > LESSON_MAX_BYTES) {
        fclose(f);
        as_error_set(err, "%s: %lld bytes, over the %d MB a lesson may have", path, (long long)st.st_size,
                     LESSON_MAX_BYTES >> 20);
        return NULL;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    char chunk[4096];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char *grown = n + got + 1 > cap ? realloc(buf, cap = (n + got + 1) * 2) : buf;
        if (!grown) {
            free(buf);
            fclose(f);
            as_error_set(err, "%s: out of memory", path);
            return NULL;
        }
        buf = grown;
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    else
        buf[n] = '\0';
    return buf;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The installed lessons' names (NAME of NAME.txt), sorted. */
static int list_names(char names[][64], int cap)
{
    char dir[PATH_MAX];
    int n = 0;
    DIR *d = datadir_dir(DATA_LESSONS, dir, sizeof dir) ? opendir(dir) : NULL;
    for (struct dirent *e; d && n < cap && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 4 && len - 4 < 64 && e->d_name[0] != '.' && !strcmp(e->d_name + len - 4, ".txt"))
            snprintf(names[n++], 64, "%.*s", (int)(len - 4), e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    return n;
}

/* "no lesson 'NAME'" with the names there are (why: what was wrong with it). */
static int no_lesson(const char *name, const char *why, as_error *err)
{
    char names[64][64], list[1024] = "";
    int n = list_names(names, 64);
    size_t o = 0;
    for (int i = 0; i < n && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", names[i]);
    return as_error_set(err, "no lesson '%.200s'%s; the lessons: %s (`lesson` lists them with their titles)", name,
                        why, n ? list : "none installed");
}

int lesson_load(const char *name, lesson *out, as_error *err)
{
    char path[PATH_MAX], file[NAME_MAX + 1];
    memset(out, 0, sizeof *out);
    /* A lesson is found by name in the lesson folders, never as a path. */
    if (!name[0] || name[0] == '.' || strchr(name, '/') || strstr(name, ".."))
        return no_lesson(name, " (a lesson is named, not a path: no '/', '..' or leading '.')", err);
    if (snprintf(file, sizeof file, "%s.txt", name) >= (int)sizeof file ||
        (!datadir_find(DATA_LESSONS, file, path, sizeof path) && !datadir_find(DATA_LESSONS, name, path, sizeof path)))
        return no_lesson(name, "", err);
    char *text = read_all(path, err);
    if (!text)
        return AS_ERR;
    int rc = lesson_parse(text, path, out, err);
    free(text);
    if (rc == AS_OK && !(out->name = strdup(name))) {
        lesson_free(out);
        return as_error_set(err, "out of memory");
    }
    return rc;
}

void lesson_free(lesson *l)
{
    for (int i = 0; i < l->n_steps; i++) {
        for (int k = 0; k < l->steps[i].n_cmds; k++)
            free(l->steps[i].cmds[k]);
        free(l->steps[i].cmds);
        free(l->steps[i].text);
    }
    free(l->steps);
    free(l->name);
    free(l->title);
    free(l->model);
    memset(l, 0, sizeof *l);
}

int lesson_list(char names[][64], char titles[][128], int cap)
{
    int n = list_names(names, cap);
    for (int i = 0; i < n; i++) {
        lesson l;
        as_error err;
        snprintf(titles[i], 128, "%.127s", lesson_load(names[i], &l, &err) == AS_OK ? l.title : err.msg);
        lesson_free(&l);
    }
    return n;
}
