/* datadir: where the program's data lives (the bundled models, the
 * lessons), found the same way from a build in the repository and from an
 * installed copy: beside the executable's repository (build/attnscope or
 * ./attnscope), PREFIX/share/attnscope beside PREFIX/bin/attnscope, the
 * current directory, then AS_DATADIR. No terminal; unit-tested. */
#ifndef ATTNSCOPE_UI_DATADIR_H
#define ATTNSCOPE_UI_DATADIR_H

#include <stdbool.h>
#include <stddef.h>

/* The data kinds: where each lives in the repository and when installed. */
typedef enum data_kind { DATA_MODELS, DATA_LESSONS, DATA_IMAGES } data_kind;

/* The first readable DIR/name for the kind's directories, in the order
 * above, into buf; false (buf the last candidate) if none is. */
bool datadir_find(data_kind kind, const char *name, char *buf, size_t cap);
/* The first of the kind's directories that exists, into buf; false if none. */
bool datadir_dir(data_kind kind, char *buf, size_t cap);
/* A model named as the user typed it: the path itself when it is a file,
 * else a bundled model by file name or by name without ".gguf"
 * (`load induction`). Returns path or buf. */
const char *datadir_model(const char *name, char *buf, size_t cap);

#endif
