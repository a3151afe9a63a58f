#include "attnscope/npy.h"

#include "attnscope/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* ---- reading ---- */

/* The value of 'key' in a .npy header's dict, or NULL. */
static const char *dict_value(const char *dict, const char *key)
{
    const char *k = strstr(dict, key);
    if (!k)
        return NULL;
    k = strchr(k + strlen(key), ':');
    if (!k)
        return NULL;
    for (k++; *k == ' '; k++)
        ;
    return k;
}

int as_npy_read_f32(const char *path, float **data, size_t *shape, int *ndim, as_error *err)
{
    struct stat st;
    *data = NULL;
    int fd = as_file_open_read(path, &st, err);
    if (fd < 0)
        return AS_ERR;
    unsigned char pre[10];
    char *dict = NULL;
    void *raw = NULL;
    int rc = AS_ERR;
    if ((size_t)st.st_size < sizeof pre)
        goto bad_short;
    if (as_file_read_full(fd, pre, sizeof pre, path, err))
        goto out;
    if (memcmp(pre, "\x93NUMPY", 6) || (pre[6] != 1 && pre[6] != 2)) {
        as_error_set(err, "%s is not a NumPy .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    size_t hlen = pre[8] | (size_t)pre[9] << 8, lead = 10;
    if (pre[6] == 2) {
        unsigned char more[2];
        if (as_file_read_full(fd, more, 2, path, err))
            goto out;
        hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
        lead = 12;
    }
    if (hlen > 65536 || lead + hlen > (size_t)st.st_size)
        goto bad_short;
    dict = malloc(hlen + 1);
    if (!dict || as_file_read_full(fd, dict, hlen, path, err))
        goto out;
    dict[hlen] = '\0';
    const char *descr = dict_value(dict, "'descr'"), *fo = dict_value(dict, "'fortran_order'"),
               *sh = dict_value(dict, "'shape'");
    bool f64 = descr && !strncmp(descr, "'<f8'", 5), f32 = descr && !strncmp(descr, "'<f4'", 5);
    if (!f32 && !f64) {
        as_error_set(err, "%s: only little-endian float32 or float64 arrays are read (its dtype is %.10s)", path,
                     descr ? descr : "not given");
        goto out;
    }
    if (!fo || strncmp(fo, "False", 5)) {
        as_error_set(err, "%s is in Fortran order; save it in C order (np.ascontiguousarray)", path);
        goto out;
    }
    if (!sh || *sh != '(') {
        as_error_set(err, "%s: its header has no shape", path);
        goto out;
    }
    size_t count = 1;
    *ndim = 0;
    for (const char *q = sh + 1; *q && *q != ')';) {
        while (*q == ' ' || *q == ',')
            q++;
        if (*q == ')')
            break;
        char *end;
        unsigned long long v = strtoull(q, &end, 10);
        if (end == q || *ndim >= AS_NPY_MAX_DIMS || v > ((size_t)1 << 40)) {
            as_error_set(err, "%s: a shape attnscope cannot read (%.40s)", path, sh);
            goto out;
        }
        shape[(*ndim)++] = (size_t)v;
        count *= (size_t)v;
        if (count > ((size_t)1 << 32)) {
            as_error_set(err, "%s: too many values", path);
            goto out;
        }
        q = end;
    }
    size_t esz = f64 ? 8 : 4;
    if ((size_t)st.st_size - lead - hlen < count * esz)
        goto bad_short;
    raw = malloc(count * esz > 0 ? count * esz : 1);
    *data = malloc((count ? count : 1) * sizeof **data);
    if (!raw || !*data) {
        as_error_set(err, "out of memory reading %s", path);
        goto out;
    }
    if (as_file_read_full(fd, raw, count * esz, path, err))
        goto out;
    for (size_t i = 0; i < count; i++) {
        if (f64) {
            double d;
            memcpy(&d, (char *)raw + i * 8, 8);
            (*data)[i] = (float)d;
        } else {
            memcpy(&(*data)[i], (char *)raw + i * 4, 4);
        }
    }
    rc = AS_OK;
    goto out;
bad_short:
    as_error_set(err, "%s is too short for a .npy file of its header", path);
out:
    if (rc != AS_OK) {
        free(*data);
        *data = NULL;
    }
    free(raw);
    free(dict);
    close(fd);
    return rc;
}
