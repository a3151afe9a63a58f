/* file: how the program touches the files a user names, so that none is
 * lost and no read blocks.
 *
 * Reading: a path is opened without blocking (O_NONBLOCK) and must be a
 * regular file; a FIFO, a device, a socket or a directory is refused
 * before a byte is read. A long read stops when the interrupt flag the
 * front set (as_file_set_interrupt: its Ctrl-C flag) is raised.
 *
 * Writing (as_write_atomic, every exporter's and the GGUF writer's one
 * way): a temporary file beside the target, renamed onto it, and only onto
 * a new name or an existing regular file. Refused, naming the path and
 * why, before anything is written: a directory, a device node, a FIFO, a
 * socket, and a protected file (the loaded model's own files: its GGUF, a
 * llama2.c checkpoint and its tokenizer.bin, a Hugging Face directory's
 * config.json, safetensors and tokenizer.json), known by device and inode
 * whatever name or link reaches them. A symbolic link is resolved first:
 * the file it names is replaced (checked as above), the link stays a link;
 * a dangling link is refused (its target's name is not the user's to make
 * up). A write that fails leaves the target as it was and no temporary
 * file behind.
 *
 * The registry of protected files is process-wide (a model may be loaded
 * by one session and a file written by another), behind a mutex; entries
 * are counted, so a file protected twice stays protected until
 * unprotected twice. */
#ifndef ATTNSCOPE_FILE_H
#define ATTNSCOPE_FILE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "attnscope/error.h"

/* A file as the kernel knows it: the same file under any name. */
typedef struct as_file_id {
    uint64_t dev, ino;
} as_file_id;

as_file_id as_file_id_of(const struct stat *st);

/* What a non-regular file is, for messages: "a directory", "a FIFO",
 * "a character device", ...; "a regular file" for one. */
const char *as_file_kind(mode_t mode);

/* Opens path for reading: the descriptor (blocking again, close-on-exec)
 * and its fstat in *st (st may be NULL), or -1 with err naming path and why
 * ("not a regular file (a FIFO)"); errno is open's when it failed (no such
 * file, no permission), else 0. Never blocks on a FIFO. */
int as_file_open_read(const char *path, struct stat *st, as_error *err);
/* The same as a stdio stream ("rb"); NULL on failure. */
FILE *as_file_fopen_read(const char *path, struct stat *st, as_error *err);
/* Reads n bytes of fd into buf in chunks, stopping with "interrupted"
 * when the interrupt flag is raised; err names path. */
int as_file_read_full(int fd, void *buf, size_t n, const char *path, as_error *err);

/* The flag a long read checks (the front's Ctrl-C flag; NULL: none). */
void as_file_set_interrupt(volatile sig_atomic_t *flag);
bool as_file_interrupted(void);

/* The registry of files no write may replace. */
void as_file_protect(as_file_id id);
void as_file_unprotect(as_file_id id);
bool as_file_is_protected(as_file_id id);

/* Writes path through a temporary file renamed into place (see above);
 * write_fn fills the open stream (a FILE *). Used by every exporter. */
int as_write_atomic(const char *path, int (*write_fn)(void *ctx, void *stream, as_error *err), void *ctx,
                    as_error *err);

#endif
