#include "attnscope/npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t as_npy_header(char *buf, size_t cap, as_npy_dtype dtype, const size_t *shape, int ndim)
{
    char dict[200];
    if ((dtype != AS_NPY_F32 && dtype != AS_NPY_I32) || ndim < 0 || (ndim > 0 && !shape))
        return 0;
    size_t off = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                                  dtype == AS_NPY_F32 ? "<f4" : "<i4");
    for (int i = 0; i < ndim && off < sizeof dict; i++)
        off += (size_t)snprintf(dict + off, sizeof dict - off, "%zu%s", shape[i],
                                ndim == 1 ? "," : (i + 1 < ndim ? ", " : ""));
    if (off < sizeof dict)
        off += (size_t)snprintf(dict + off, sizeof dict - off, "), }");
    if (off >= sizeof dict)
        return 0;
    /* Total header length is a multiple of 64, ending in '\n'. */
    size_t total = 10 + off + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap)
        return 0;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)((total - 10) & 0xff);
    buf[9] = (char)((total - 10) >> 8);
    memcpy(buf + 10, dict, off);
    memset(buf + 10 + off, ' ', total - 10 - off - 1);
    buf[total - 1] = '\n';
    return total;
}

struct npy_job {
    as_npy_dtype dtype;
    const void *data;
    const size_t *shape;
    int ndim;
};

static int write_npy(void *ctx, void *stream, as_error *err)
{
    const struct npy_job *j = ctx;
    char header[256];
    size_t len = as_npy_header(header, sizeof header, j->dtype, j->shape, j->ndim);
    if (!len)
        return as_error_set(err, "array shape too long for a .npy header");
    size_t count = 1;
    for (int i = 0; i < j->ndim; i++)
        count *= j->shape[i];
    if (fwrite(header, 1, len, stream) != len || fwrite(j->data, 4, count, stream) != count)
        return as_error_set(err, "%s", strerror(errno));
    return AS_OK;
}

int as_npy_write(const char *path, as_npy_dtype dtype, const void *data, const size_t *shape, int ndim,
                 as_error *err)
{
    /* Refused before a temporary file exists or the data is read: a size
     * that wraps would write a header that promises more than follows. */
    char header[256];
    if (!as_npy_header(header, sizeof header, dtype, shape, ndim))
        return as_error_set(err, "%s: cannot describe this array in a .npy header (dtype %d, %d dimensions)",
                            path, (int)dtype, ndim);
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && count > SIZE_MAX / 4 / shape[i])
            return as_error_set(err, "%s: an array of shape dimension %zu at axis %d is too large", path,
                                shape[i], i);
        count *= shape[i];
    }
    struct npy_job j = {dtype, data, shape, ndim};
    return as_write_atomic(path, write_npy, &j, err);
}
