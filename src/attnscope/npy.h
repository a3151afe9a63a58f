/* npy: writes arrays in NumPy's .npy format (version 1.0, little-endian
 * float32 or int32, C order), through as_write_atomic (file.h): a
 * temporary file renamed into place, so an existing file is replaced only
 * by a complete one, and never a device, a FIFO or the loaded model. */
#ifndef ATTNSCOPE_NPY_H
#define ATTNSCOPE_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "attnscope/error.h"
#include "attnscope/file.h"

typedef enum as_npy_dtype { AS_NPY_F32, AS_NPY_I32 } as_npy_dtype;

/* Formats the header (magic, version, dict, padding to 64 bytes) into buf
 * (at least 256 bytes); returns its length or 0 if the shape is too long. */
size_t as_npy_header(char *buf, size_t cap, as_npy_dtype dtype, const size_t *shape, int ndim);
int as_npy_write(const char *path, as_npy_dtype dtype, const void *data, const size_t *shape, int ndim,
                 as_error *err);

#define AS_NPY_MAX_DIMS 8
/* Reads a little-endian float32 or float64 .npy array in C order (the file
 * opened as file.h's reads are: a regular file only) into *data, float32,
 * malloc'd; its shape into shape[AS_NPY_MAX_DIMS], *ndim dims. */
int as_npy_read_f32(const char *path, float **data, size_t *shape, int *ndim, as_error *err);

#endif
